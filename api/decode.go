package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/airlock-dev/airlock/core"
	"github.com/gin-gonic/gin"
)

// decodeJSON reads the request body into v. An empty body leaves v as is
// when allowEmpty; malformed JSON is a 400, an oversized body a 413.
func decodeJSON(c *gin.Context, v any, allowEmpty bool) error {
	data, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return newError(core.ErrInvalid, "could not read the request body")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if allowEmpty {
			return nil
		}
		return newError(core.ErrInvalid, "request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return newError(core.ErrInvalid, "malformed JSON body: "+err.Error())
	}
	if dec.More() {
		return newError(core.ErrInvalid, "malformed JSON body: trailing data after the object")
	}
	return nil
}
