// Package checkio is what kueuecheck and trainjobcheck share: reading multi-document input,
// and reporting an upstream webhook's errors as the API server would.
package checkio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// FieldError is one of a webhook's field.Error values, as the API server would report it.
type FieldError struct {
	Type    string `json:"type"`    // field.ErrorType, e.g. FieldValueInvalid; "" for a plain error
	Field   string `json:"field"`   // e.g. spec.nodeTaints[1]
	Value   string `json:"value"`   // the refused value, as the webhook prints it
	Detail  string `json:"detail"`  // the webhook's explanation
	Message string `json:"message"` // the whole line as the webhook returns it
}

// ReadDocs reads the non-empty documents of a multi-document YAML or JSON file ("-": stdin).
func ReadDocs(name string) ([][]byte, error) {
	var in io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	var docs [][]byte
	reader := k8syaml.NewYAMLReader(bufio.NewReader(in))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// Decode decodes doc into obj: no error, or the one the API server would refuse it with.
func Decode(doc []byte, obj any) []FieldError {
	if err := yaml.Unmarshal(doc, obj); err != nil {
		return []FieldError{{
			Type: string(field.ErrorTypeTypeInvalid), Detail: err.Error(),
			Message: "cannot decode: " + err.Error(),
		}}
	}
	return []FieldError{}
}

// FieldErrors unpacks what a webhook returned: field.ErrorList.ToAggregate(), an aggregate of
// *field.Error, or a plain error.
func FieldErrors(err error) []FieldError {
	if err == nil {
		return nil
	}
	var errs []error
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	} else {
		errs = []error{err}
	}
	out := make([]FieldError, 0, len(errs))
	for _, e := range errs {
		var fe *field.Error
		if errors.As(e, &fe) {
			out = append(out, FieldError{
				Type: string(fe.Type), Field: fe.Field, Value: badValue(fe.BadValue),
				Detail: fe.Detail, Message: fe.Error(),
			})
			continue
		}
		out = append(out, FieldError{Detail: e.Error(), Message: e.Error()})
	}
	return out
}

func badValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case fmt.Stringer:
		return v.String()
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprintf("%v", v)
}

// ModuleVersion is the version of a module this binary was built with (its Go build info).
func ModuleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				return dep.Version
			}
		}
	}
	return "unknown"
}
