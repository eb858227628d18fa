package api

import (
	_ "embed"
	"encoding/json"
	"errors"
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
	if !json.Valid(openAPIJSON) {
		return nil, errors.New("api: embedded openapi.json is not JSON")
	}
	return OpenAPI(), nil
}

// openAPI answers GET /openapi.json.
func (s *Server) openAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", s.openapi)
}
