// Command promrulecheck runs the Prometheus Operator's own check of a PrometheusRule on rendered
// PrometheusRules, without a cluster, and prints one JSON line per PrometheusRule with the errors
// the operator would reject it with (the format of kueuecheck's and workloadcheck's lines).
//
//	promrulecheck FILE...   (multi-document YAML or JSON; "-" reads standard input)
//
// The check is operator.ValidateRule (github.com/prometheus-operator/prometheus-operator v0.85.0
// pkg/operator/rules.go): the spec serialised as the operator writes it into a rule file must be
// at most MaxConfigMapDataSize bytes (half of v1.MaxSecretSize: 512 KiB), then it must parse with
// Prometheus's rulefmt under the operator's legacy label-name validation (its init). The operator
// calls it on two paths:
//
//   - its reconciler: PrometheusRuleSelector.Select (same file) calls generateRulesConfiguration,
//     which calls ValidateRule on the spec after sanitizePrometheusRulesSpec (that only drops
//     fields the Prometheus's version does not support: none from Prometheus 3.0.0, and the
//     operator's default, DefaultPrometheusVersion in pkg/operator/defaults.go, is a 3.x; so
//     the spec ValidateRule sees here is the one it sees there, or larger). A rule it fails is
//     skipped: logged "skipping prometheusrule", sent as a Warning event
//     InvalidConfiguration on the PrometheusRule, and counted by the reconciler
//     (pkg/prometheus/server/rules.go) in the operator's metric
//     prometheus_operator_managed_resources{resource="PrometheusRule",state="rejected"}
//     (pkg/operator/operator.go); the other rules load, so Prometheus runs on without its
//     recording rules and nothing fails loudly.
//   - its admission webhook (cmd/admission-webhook, pkg/admission/admission.go
//     validatePrometheusRules): ValidateRule on the spec as decoded from the request; a site
//     that runs the webhook has the PrometheusRule refused when Argo CD applies it.
//
// Each document is decoded as the webhook decodes it (encoding/json into
// monitoringv1.PrometheusRule; a YAML document is turned into that JSON first by
// sigs.k8s.io/yaml, as kubectl does) and ValidateRule gets its Spec. validate hands it JSON
// documents, which Python writes about 12 times faster than YAML (a large fleet's rules are tens
// of megabytes).
//
// Exit code 0 when the input was read (rejections are in the JSON), 2 when it could not be.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus-operator/prometheus-operator/pkg/operator"
)

const module = "github.com/prometheus-operator/prometheus-operator"

// Error is one of the errors ValidateRule returned, as the operator prints it.
type Error struct {
	Message string `json:"message"`
}

// Result is the verdict on one PrometheusRule.
type Result struct {
	Module     string  `json:"module"`
	Version    string  `json:"version"`
	File       string  `json:"file"`
	Document   int     `json:"document"`
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Name       string  `json:"name"`
	Namespace  string  `json:"namespace,omitempty"`
	MaxBytes   int     `json:"maxBytes"` // the operator's limit on a rule file, for a hint
	Checked    bool    `json:"checked"`
	Allowed    bool    `json:"allowed"`
	Errors     []Error `json:"errors"`
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: promrulecheck FILE... (\"-\" for stdin)")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	// Decoding and validating allocate much short-lived memory, little of it live at once (a
	// document at a time per worker): collecting a quarter as often took a fifth less CPU on
	// the benchmark fleet's rules (docs/performance.md). GOGC overrides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	version := moduleVersion(module)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for _, name := range flag.Args() {
		docs, err := readDocs(name)
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		for i, res := range checkAll(docs) {
			if res == nil {
				continue
			}
			res.Module, res.Version, res.File, res.Document = module, version, name, i
			if err := enc.Encode(res); err != nil {
				fail(err)
			}
		}
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

// checkAll checks a file's documents side by side, one worker a CPU: each verdict depends on its
// document alone (check reads nothing else), and they are returned in input order, nil for a
// document that is no PrometheusRule. A file at a time keeps one file's documents in memory.
func checkAll(docs [][]byte) []*Result {
	results := make([]*Result, len(docs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(docs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if res, ok := check(docs[i]); ok {
					results[i] = &res
				}
			}
		}()
	}
	for i := range docs {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "promrulecheck: %v\n", err)
	os.Exit(2)
}

// check validates one document if it is a PrometheusRule; ok is false for any other object.
func check(doc []byte) (Result, bool) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	doc, err := toJSON(doc)
	if err != nil {
		return Result{}, false
	}
	if err := json.Unmarshal(doc, &head); err != nil ||
		head.APIVersion != monitoringv1.SchemeGroupVersion.String() ||
		head.Kind != monitoringv1.PrometheusRuleKind {
		return Result{}, false
	}
	res := Result{
		APIVersion: head.APIVersion, Kind: head.Kind,
		MaxBytes: operator.MaxConfigMapDataSize, Errors: []Error{},
	}
	rule := &monitoringv1.PrometheusRule{}
	if err := json.Unmarshal(doc, rule); err != nil {
		res.Errors = append(res.Errors, Error{Message: "cannot decode: " + err.Error()})
		return res, true
	}
	res.Name, res.Namespace, res.Checked = rule.Name, rule.Namespace, true
	for _, err := range operator.ValidateRule(rule.Spec) {
		res.Errors = append(res.Errors, Error{Message: err.Error()})
	}
	res.Allowed = len(res.Errors) == 0
	return res, true
}

// toJSON returns a JSON document as it is and turns a YAML one into JSON.
func toJSON(doc []byte) ([]byte, error) {
	if json.Valid(doc) {
		return doc, nil
	}
	return yaml.YAMLToJSON(doc)
}

// readDocs reads the non-empty documents of a multi-document YAML or JSON file ("-": stdin).
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
