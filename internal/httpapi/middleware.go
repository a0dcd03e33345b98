package httpapi

import (
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"agentserver/internal/runs"
)

// exposedHeaders are the response headers browsers may read.
const exposedHeaders = "Content-Location, Location, X-Pagination-Total, X-Pagination-Next"

// allowedMethods are the methods the API answers.
const allowedMethods = "GET, POST, PUT, PATCH, DELETE, OPTIONS"

// cors answers every OPTIONS request itself, as a preflight (204, CORS
// headers only, never a resource, so no route needs the API key for it),
// and marks every other response readable from any origin, exposing the
// headers the SDKs read.
func cors() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			origin := c.Request().Header.Get("Origin")
			if origin == "" {
				origin = "*"
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", exposedHeaders)
			if c.Request().Method == http.MethodOptions {
				h.Set("Allow", allowedMethods)
				h.Set("Access-Control-Allow-Methods", allowedMethods)
				allow := c.Request().Header.Get("Access-Control-Request-Headers")
				if allow == "" {
					allow = "*"
				}
				h.Set("Access-Control-Allow-Headers", allow)
				h.Set("Access-Control-Max-Age", "86400")
				return c.NoContent(http.StatusNoContent)
			}
			return next(c)
		}
	}
}

// lenientJSON accepts the body encodings real clients send: a JSON body
// labelled text/plain (or with no content type at all) is treated as JSON, and
// an empty body on a POST, PUT or PATCH reads as no body.
func lenientJSON() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			default:
				return next(c)
			}
			if r.ContentLength == 0 {
				r.Body = http.NoBody
				r.Header.Del("Content-Type")
				return next(c)
			}
			ct := r.Header.Get("Content-Type")
			mt, _, _ := mime.ParseMediaType(ct)
			if ct == "" || mt == "text/plain" || (strings.HasSuffix(mt, "+json") && mt != "application/json") {
				r.Header.Set("Content-Type", "application/json")
			}
			return next(c)
		}
	}
}

// markPeers marks the context of a request another replica sent
// (runs.PeerHeader): its streams are served from this replica's own runs.
func markPeers() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().Header.Get(runs.PeerHeader) != "" {
				c.SetRequest(c.Request().WithContext(runs.WithPeer(c.Request().Context())))
			}
			return next(c)
		}
	}
}
