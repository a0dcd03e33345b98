package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/labstack/echo/v4"
)

// uuidPattern accepts every RFC 9562 version, including v7 (kin-openapi's
// predefined pattern stops at v5).
const uuidPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`

// requestValidator checks each request against the OpenAPI document before a
// handler sees it. A request that fails is answered 422 and changes nothing.
type requestValidator struct {
	doc     *openapi3.T
	router  routers.Router
	options *openapi3filter.Options
	// opaque finds the fields of a large body that the validator need not
	// decode (opaque.go).
	opaque opaqueFields
}

func newRequestValidator(doc *openapi3.T) (*requestValidator, error) {
	doc.Servers = nil // match paths on any host
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("build validation router: %w", err)
	}
	return &requestValidator{
		doc:    doc,
		router: router,
		options: &openapi3filter.Options{
			AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
			SkipSettingDefaults: true,
			KeepValidatedValue:  true,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{
				openapi3.EnableFormatValidation(),
				openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(uuidPattern)),
			},
		},
	}, nil
}

// uuidRE is the compiled uuidPattern, for handlers that check ids themselves.
var uuidRE = regexp.MustCompile(uuidPattern)

func (v *requestValidator) middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			route, params, err := v.router.FindRoute(r)
			if err != nil {
				// Unknown paths and methods are echo's to answer (404/405);
				// routes outside the contract (MCP, A2A, the protocol
				// stream) decode their bodies themselves, unbounded.
				releaseSlot(c)
				return next(c)
			}
			dropEmptyOptionalQuery(r, route)
			in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: v.options}
			// A large body is checked in a lighter copy when the route
			// has opaque fields; its handler then decodes the body as sent.
			body, _ := c.Get(largeBodyKey).([]byte)
			light, lightened := v.opaque.lighten(route, body)
			if lightened {
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(light)), int64(len(light))
			}
			err = openapi3filter.ValidateRequest(r.Context(), in)
			if lightened {
				r.Body, r.ContentLength, r.GetBody = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
			}
			if err != nil {
				return invalidf(validationMessage(err))
			}
			return next(c)
		}
	}
}

// validationMessage turns a kin-openapi error into one readable sentence.
// checkField checks v, the field named field of a request that is no
// route of the contract (a command of the thread-centric protocol), against
// the contract's component schema name: the check the request validator
// makes of the same field in a REST body, with the same message.
func (v *requestValidator) checkField(name, field string, value any) error {
	ref := v.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("the contract has no schema %s", name)
	}
	if err := ref.Value.VisitJSON(value, v.options.SchemaValidationOptions...); err != nil {
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			return invalidf(fmt.Sprintf("invalid params: field %q: %s", field, se.Reason))
		}
		return invalidf(fmt.Sprintf("invalid params: field %q: %v", field, err))
	}
	return nil
}

func validationMessage(err error) string {
	var re *openapi3filter.RequestError
	if errors.As(err, &re) {
		where := "request body"
		if re.Parameter != nil {
			where = fmt.Sprintf("%s parameter %q", re.Parameter.In, re.Parameter.Name)
		}
		var se *openapi3.SchemaError
		if errors.As(re.Err, &se) {
			path := strings.Join(se.JSONPointer(), ".")
			if path != "" {
				return fmt.Sprintf("invalid %s: field %q: %s", where, path, se.Reason)
			}
			return fmt.Sprintf("invalid %s: %s", where, se.Reason)
		}
		if re.Err != nil {
			return fmt.Sprintf("invalid %s: %s", where, re.Err.Error())
		}
		return fmt.Sprintf("invalid %s: %s", where, re.Reason)
	}
	return "invalid request: " + err.Error()
}
