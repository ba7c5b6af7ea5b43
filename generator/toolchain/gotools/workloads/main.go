// Command workloadcheck runs JobSet's and LeaderWorkerSet's own admission webhooks on rendered
// JobSets and LeaderWorkerSets, without a cluster, and prints one JSON line per such object with
// the errors its webhook would refuse it with (the format of kueuecheck's lines).
//
//	workloadcheck [-crds DIR] FILE...   (multi-document YAML or JSON; "-" reads standard input)
//
// The API server applies the defaults of a CRD's schema before it calls admission webhooks (a
// JobSet's replicatedJobs[].groupName defaults to "default" there, and JobSet's webhook refuses
// an empty one). -crds names a folder of CRD objects as JSON files (the pinned CRDs `tools
// install` lays out); each object is defaulted with its CRD's structural schema as the API server
// does it (k8s.io/apiextensions-apiserver pkg/apiserver/schema/defaulting Default, called from
// pkg/apiserver/customresource_handler.go), at the version the module graph selects. Without the
// CRD of an object's kind, it is checked as written.
//
// The webhooks are then called as the controller managers call them for a create
// (controller-runtime's CustomDefaulter, then CustomValidator.ValidateCreate):
//
//   - JobSet (jobset.x-k8s.io/v1alpha2): sigs.k8s.io/jobset v0.11.1
//     pkg/webhooks/jobset_webhook.go Default, then ValidateCreate (replicated job names and sizes,
//     success and failure policies, network subdomain, coordinator, volume claim policies; the
//     last reads PVCs through the manager's client, here an empty fake one).
//   - LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): sigs.k8s.io/lws v0.8.0
//     pkg/webhooks/leaderworkerset_webhook.go Default, then ValidateCreate (size, replicas,
//     rollout strategy, network and subgroup policies).
//
// Other objects of those groups are listed as not checked; objects of other groups are skipped.
// Exit code 0 when the input was read (refusals are in the JSON), 2 when it could not be.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/go-logr/logr"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetwebhooks "sigs.k8s.io/jobset/pkg/webhooks"
	lws "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwswebhooks "sigs.k8s.io/lws/pkg/webhooks"
)

// The module whose webhook decides each API group's objects.
var modules = map[string]string{
	jobset.GroupVersion.Group: "sigs.k8s.io/jobset",
	lws.GroupVersion.Group:    "sigs.k8s.io/lws",
}

// FieldError is one of a webhook's errors, as the API server would report it.
type FieldError struct {
	Type    string `json:"type"`    // field.ErrorType, "" for a plain error
	Field   string `json:"field"`   // e.g. spec.leaderWorkerTemplate.size
	Value   string `json:"value"`   // the refused value, as the webhook prints it
	Detail  string `json:"detail"`  // the webhook's explanation
	Message string `json:"message"` // the whole line as the webhook returns it
}

// Result is the verdict on one object.
type Result struct {
	Module     string       `json:"module"`  // whose webhook decides it
	Version    string       `json:"version"` // that module's version (Go build info)
	File       string       `json:"file"`
	Document   int          `json:"document"` // 0-based index in its file
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Name       string       `json:"name"`
	Namespace  string       `json:"namespace,omitempty"`
	Webhook    string       `json:"webhook,omitempty"` // what ran, e.g. JobSetWebhook
	Checked    bool         `json:"checked"`           // false: no webhook decides it
	Allowed    bool         `json:"allowed"`           // no error (nothing refuses it)
	Errors     []FieldError `json:"errors"`
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: workloadcheck [-crds DIR] FILE... (\"-\" for stdin)")
	}
	crdDir := flag.String("crds", "", "folder of CRD objects (JSON) whose schema defaults apply")
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	schemas, err := loadSchemas(*crdDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "workloadcheck: %v\n", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for _, name := range flag.Args() {
		docs, err := readDocs(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "workloadcheck: %s: %v\n", name, err)
			os.Exit(2)
		}
		for i, doc := range docs {
			res, ok, err := check(ctx, defaulted(doc, schemas))
			if err != nil {
				fmt.Fprintf(os.Stderr, "workloadcheck: %s: document %d: %v\n", name, i, err)
				os.Exit(2)
			}
			if !ok {
				continue
			}
			res.File, res.Document, res.Version = name, i, moduleVersion(res.Module)
			if err := enc.Encode(res); err != nil {
				fmt.Fprintf(os.Stderr, "workloadcheck: %v\n", err)
				os.Exit(2)
			}
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "workloadcheck: %v\n", err)
		os.Exit(2)
	}
}

func readDocs(name string) ([][]byte, error) {
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

// loadSchemas reads the structural schema of every version of the JobSet and LeaderWorkerSet
// CRDs in dir, by apiVersion and kind; none when dir is "".
func loadSchemas(dir string) (map[string]*structuralschema.Structural, error) {
	out := map[string]*structuralschema.Structural{}
	if dir == "" {
		return out, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := json.Unmarshal(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if _, ours := modules[crd.Spec.Group]; !ours {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
				v.Schema.OpenAPIV3Schema, internal, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			s, err := structuralschema.NewStructural(internal)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out[crd.Spec.Group+"/"+v.Name+" "+crd.Spec.Names.Kind] = s
		}
	}
	return out, nil
}

// defaulted is doc with its CRD's schema defaults applied, as the API server applies them; doc
// itself when its kind has no schema here or it does not decode (check reports that).
func defaulted(doc []byte, schemas map[string]*structuralschema.Structural) []byte {
	obj := map[string]any{}
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return doc
	}
	s, ok := schemas[fmt.Sprint(obj["apiVersion"])+" "+fmt.Sprint(obj["kind"])]
	if !ok {
		return doc
	}
	structuraldefaulting.Default(obj, s)
	out, err := json.Marshal(obj)
	if err != nil {
		return doc
	}
	return out
}

// check runs the webhook of one document's kind; ok is false for an object of another group.
func check(ctx context.Context, doc []byte) (res Result, ok bool, err error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return res, false, err
	}
	group, _, versioned := strings.Cut(head.APIVersion, "/")
	module, known := modules[group]
	if !versioned || !known {
		return res, false, nil
	}
	res = Result{
		Module: module, APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name,
		Namespace: head.Metadata.Namespace, Errors: []FieldError{},
	}
	var verr error
	switch {
	case head.APIVersion == jobset.GroupVersion.String() && head.Kind == "JobSet":
		w, err := jobsetwebhooks.NewJobSetWebhook(fake.NewClientBuilder().Build())
		if err != nil {
			return res, false, err
		}
		verr = admit(ctx, doc, &res, "JobSetWebhook", &jobset.JobSet{},
			func(ctx context.Context, o *jobset.JobSet) error { return w.Default(ctx, o) },
			func(ctx context.Context, o *jobset.JobSet) (admission.Warnings, error) {
				return w.ValidateCreate(ctx, o)
			})
	case head.APIVersion == lws.GroupVersion.String() && head.Kind == "LeaderWorkerSet":
		w := &lwswebhooks.LeaderWorkerSetWebhook{}
		verr = admit(ctx, doc, &res, "LeaderWorkerSetWebhook", &lws.LeaderWorkerSet{},
			func(ctx context.Context, o *lws.LeaderWorkerSet) error { return w.Default(ctx, o) },
			func(ctx context.Context, o *lws.LeaderWorkerSet) (admission.Warnings, error) {
				return w.ValidateCreate(ctx, o)
			})
	default:
		res.Allowed = true
		return res, true, nil
	}
	res.Errors = append(res.Errors, fieldErrors(verr)...)
	res.Allowed = len(res.Errors) == 0
	return res, true, nil
}

// admit decodes doc into obj and runs the webhook on it as the API server does for a create:
// the defaulter, then the validator. A decoding refusal stops it there.
func admit[T any](
	ctx context.Context, doc []byte, res *Result, webhook string, obj T,
	defaulter func(context.Context, T) error,
	validator func(context.Context, T) (admission.Warnings, error),
) error {
	if err := yaml.Unmarshal(doc, obj); err != nil {
		res.Errors = []FieldError{{
			Type: string(field.ErrorTypeTypeInvalid), Detail: err.Error(),
			Message: "cannot decode: " + err.Error(),
		}}
		return nil
	}
	res.Webhook, res.Checked = webhook, true
	if err := defaulter(ctx, obj); err != nil {
		return err
	}
	_, err := validator(ctx, obj)
	return err
}

// fieldErrors unpacks what a webhook returned: LeaderWorkerSet's ValidateCreate returns
// field.ErrorList.ToAggregate(), JobSet's errors.Join of plain errors and *field.Error.
func fieldErrors(err error) []FieldError {
	if err == nil {
		return nil
	}
	var errs []error
	var agg utilerrors.Aggregate
	var joined interface{ Unwrap() []error }
	switch {
	case errors.As(err, &agg):
		errs = agg.Errors()
	case errors.As(err, &joined):
		errs = joined.Unwrap()
	default:
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

// moduleVersion is the version of a module this binary was built with (its Go build info).
func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				return dep.Version
			}
		}
	}
	return "unknown"
}
