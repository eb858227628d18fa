package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIJSON is the hand-written OpenAPI 3.1 contract of every route.
//
//go:embed openapi.json
var openAPIJSON []byte

// OpenAPI returns a copy of the OpenAPI 3.1 document the server serves.
func OpenAPI() []byte {
	return append([]byte(nil), openAPIJSON...)
}

// openAPIDocument checks the embedded document is JSON and returns it.
func openAPIDocument() ([]byte, error) {
	var v map[string]any
	if err := json.Unmarshal(openAPIJSON, &v); err != nil {
		return nil, fmt.Errorf("api: embedded openapi.json: %w", err)
	}
	return OpenAPI(), nil
}

// openAPI answers GET /openapi.json.
func (s *Server) openAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", s.openapi)
}
