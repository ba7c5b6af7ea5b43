package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
)

// upstreamCheck is check as kubeconform's own code runs it: every document through
// Resource.Resources() (which caches Signature()) before ValidateResource, as the kubeconform
// binary's findResourcesInReader does (v0.7.0 pkg/resource/files.go), no document skipping it.
func upstreamCheck(t *testing.T, yml []byte, v validator.Validator) ([]json.RawMessage, []schemaResult) {
	t.Helper()
	objects, problems := []json.RawMessage{}, []schemaResult{}
	var resources []resource.Resource
	scanner := bufio.NewScanner(bytes.NewReader(yml))
	scanner.Split(resource.SplitYAMLDocument)
	for scanner.Scan() {
		if len(scanner.Text()) > 0 {
			res := resource.Resource{Path: "u", Bytes: []byte(scanner.Text())}
			resources = append(resources, res.Resources()...)
		}
	}
	for _, res := range resources {
		if err := appendObject(&objects, res.Bytes); err != nil {
			t.Fatal(err)
		}
		r := v.ValidateResource(res)
		if r.Status == validator.Valid || r.Status == validator.Skipped || r.Status == validator.Empty {
			continue
		}
		sig, _ := r.Resource.Signature()
		problems = append(problems, schemaResult{
			Kind: sig.Kind, Name: sig.Name, Version: sig.Version,
			Status: statusName(r.Status), Msg: r.Err.Error(), ValidationErrors: r.ValidationErrors,
		})
	}
	return objects, problems
}

// A validator with one schema, a strict v1 ConfigMap, in a local folder.
func configMapValidator(t *testing.T) validator.Validator {
	t.Helper()
	dir := t.TempDir()
	schema := `{"type": "object", "additionalProperties": false, "properties": {
		"apiVersion": {"type": "string"}, "kind": {"type": "string"},
		"metadata": {"type": "object"}, "data": {"type": "object"}}}`
	if err := os.WriteFile(filepath.Join(dir, "configmap-v1.json"), []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := validator.New([]string{dir + "/{{ .ResourceKind }}{{ .KindSuffix }}.json"}, validator.Opts{
		KubernetesVersion: "1.34.0", Strict: true,
		SkipKinds: map[string]struct{}{}, RejectKinds: map[string]struct{}{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Documents check lets skip Resources() and those it does not give the verdicts kubeconform's
// own path gives; the ones whose signature the two ways of reading it disagree on, a List, and
// documents without a kind say what kubeconform says of them.
func TestCheckGivesKubeconformsVerdictOnDocumentsReadApart(t *testing.T) {
	v := configMapValidator(t)
	cases := []struct {
		name, yaml string
		objects    int
		problems   []schemaResult // nil: compared with upstream only
	}{
		{"plain", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\n", 1, []schemaResult{}},
		{"unknown field", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\nbogus: 1\n", 1, nil},
		{"List", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n" +
			"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n  bogus: 1\n", 2, nil},
		{"lowercase list", "apiVersion: v1\nkind: list\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n", 1, []schemaResult{}},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: a\n", 1, []schemaResult{{
			Name: "a", Version: "v1", Status: "statusError", Msg: "error while parsing: missing 'kind' key",
		}}},
		{"empty kind", "apiVersion: v1\nkind: ''\nmetadata:\n  name: a\n", 1, []schemaResult{{
			Name: "a", Version: "v1", Status: "statusError", Msg: "error while parsing: missing 'kind' key",
		}}},
		{"no apiVersion", "kind: ConfigMap\nmetadata:\n  name: a\n", 1, nil},
		{"kind in capitals", "apiVersion: v1\nKind: ConfigMap\nmetadata:\n  name: a\n", 1, nil},
		{"both spellings", "apiVersion: v1\nkind: ConfigMap\nKIND: Secret\nmetadata:\n  name: a\n", 1, nil},
		{"numeric kind", "apiVersion: v1\nkind: 5\nmetadata:\n  name: a\n", 1, nil},
		{"numeric name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 5\n", 1, nil},
		{"empty generateName", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  generateName: ''\n  bad: 1\nbogus: 1\n", 1, nil},
		{"generateName", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: a-\nbogus: 1\n", 1, []schemaResult{{
			Kind: "ConfigMap", Name: "a-{{ generateName }}", Version: "v1", Status: "statusInvalid",
			ValidationErrors: []validator.ValidationError{{Msg: "additional properties 'bogus' not allowed"}},
		}}},
		{"metadata null", "apiVersion: v1\nkind: ConfigMap\nmetadata:\nbogus: 1\n", 1, nil},
		{"metadata a list", "apiVersion: v1\nkind: ConfigMap\nmetadata: [a]\n", 1, nil},
		{"Metadata in capitals", "apiVersion: v1\nkind: ConfigMap\nMetadata:\n  name: a\n", 1, nil},
		{"kind with a Kelvin sign", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n\u212aind: Secret\n", 1, nil},
		{"duplicate key", "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata:\n  name: a\n", 1, nil},
		{"comment only", "# nothing\n", 0, []schemaResult{}},
		{"two documents", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n", 2, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objects, problems, _, err := check("u", []byte(c.yaml), &checker{v: v, gates: newKindGates()})
			if err != nil {
				t.Fatal(err)
			}
			wantObjects, wantProblems := upstreamCheck(t, []byte(c.yaml), v)
			if !reflect.DeepEqual(objects, wantObjects) || len(objects) != c.objects {
				t.Errorf("objects %s, kubeconform's path %s, want %d", objects, wantObjects, c.objects)
			}
			if !reflect.DeepEqual(problems, wantProblems) {
				t.Errorf("problems %+v, kubeconform's path %+v", problems, wantProblems)
			}
			for i := range problems {
				if i < len(c.problems) && c.problems[i].Msg == "" {
					problems[i].Msg = "" // it names the schema's temporary file
				}
			}
			if c.problems != nil && !reflect.DeepEqual(problems, c.problems) {
				t.Errorf("problems %+v, want %+v", problems, c.problems)
			}
		})
	}
}

// plainSignature vouches only for documents both ways of reading a signature agree on.
func TestPlainSignature(t *testing.T) {
	cases := map[string]string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}`: "v1/ConfigMap",
		`{"apiVersion":"v1","kind":"ConfigMap"}`:                                         "v1/ConfigMap",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"a-"}}`:        "v1/ConfigMap",
		`{"apiVersion":"v1","kind":"List","items":[]}`:                                   "",
		`{"apiVersion":"v1","kind":"LIST","items":[]}`:                                   "",
		`{"apiVersion":"v1"}`:                                                   "",
		`{"apiVersion":"v1","kind":""}`:                                         "",
		`{"apiVersion":"","kind":"ConfigMap"}`:                                  "",
		`{"apiVersion":"v1","kind":5}`:                                          "",
		`{"apiVersion":"v1","Kind":"ConfigMap","kind":"ConfigMap"}`:             "",
		`{"APIVERSION":"v1","apiVersion":"v1","kind":"ConfigMap"}`:              "",
		`{"apiVersion":"v1","kind":"ConfigMap","Metadata":{}}`:                  "",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":[]}`:                  "",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":null}`:                "v1/ConfigMap",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":5}}`:          "",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":true}}`:  "",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"Name":"a"}}`:        "",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":""}}`: "",
		`{"apiVersion":"v1","kind":"ConfigMap","\u212aind":"Secret"}`:           "",
		`null`: "",
		`[1]`:  "",
	}
	for doc, want := range cases {
		got, ok := plainSignature([]byte(doc))
		if got != want || ok != (want != "") {
			t.Errorf("plainSignature(%s) = %q, %v; want %q", doc, got, ok, want)
		}
	}
}
