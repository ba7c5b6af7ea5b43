// kbuild builds many kustomize units in one process and validates each build like kubeconform,
// streaming one JSON line per unit. It exists for speed only: the pinned kustomize and
// kubeconform binaries stay the reference, and a test asserts byte-identical builds.
//
//	kbuild -root DIR [-workers N] [-serial] [-yaml] [-validate -strict -kubernetes-version X.Y.Z
//	       -schema-location L... -valid-docs FILE] [UNIT...]
//
// UNITs are folders relative to DIR; without arguments they are read from stdin, one a line.
//
// The build is what `kustomize build DIR/UNIT` does with no flags (kustomize v5.8.1,
// kustomize/commands/build/build.go: krusty.MakeDefaultOptions() then HonorKustomizeFlags with
// every flag at its default), and the output is resmap.AsYaml(), the bytes the binary prints.
// Validation is kubeconform's own validator package (v0.7.0) with the options its CLI builds
// from the same flags (kubeconform cmd/kubeconform/main.go), on the same bytes.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

type schemaLocations []string

func (s *schemaLocations) String() string     { return strings.Join(*s, " ") }
func (s *schemaLocations) Set(v string) error { *s = append(*s, v); return nil }

// One object kubeconform did not find valid; the keys are those of kubeconform's JSON output.
type schemaResult struct {
	Kind             string                      `json:"kind"`
	Name             string                      `json:"name"`
	Version          string                      `json:"version"`
	Status           string                      `json:"status"`
	Msg              string                      `json:"msg"`
	ValidationErrors []validator.ValidationError `json:"validationErrors,omitempty"`
}

type unitResult struct {
	Unit    string            `json:"unit"`
	OK      bool              `json:"ok"`
	Error   string            `json:"error"`
	YAML    *string           `json:"yaml,omitempty"`
	Objects []json.RawMessage `json:"objects"`
	Schema  []schemaResult    `json:"schema"`
	// The SHA-256 (hex) of each document kubeconform found valid, or -valid-docs vouched for.
	Valid   []string `json:"valid"`
	Seconds float64  `json:"seconds"`
}

// kustomizeOptions are the options `kustomize build` uses when no flag is given.
func kustomizeOptions() *krusty.Options {
	o := krusty.MakeDefaultOptions()
	o.Reorder = krusty.ReorderOptionUnspecified
	o.LoadRestrictions = types.LoadRestrictionsRootOnly
	o.PluginConfig.HelmConfig.Enabled = false
	o.PluginConfig.HelmConfig.Command = "helm"
	o.PluginConfig.HelmConfig.ApiVersions = []string{}
	o.PluginConfig.HelmConfig.KubeVersion = ""
	o.PluginConfig.HelmConfig.Debug = false
	label, set := os.LookupEnv(konfig.EnableManagedbyLabelEnv)
	o.AddManagedbyLabel = set && label == "on"
	return o
}

func statusName(s validator.Status) string {
	switch s {
	case validator.Invalid:
		return "statusInvalid"
	case validator.Error:
		return "statusError"
	case validator.Skipped:
		return "statusSkipped"
	case validator.Valid:
		return "statusValid"
	}
	return ""
}

// kindGates lets one worker at a time validate the first object of each kind: kubeconform
// compiles a kind's schema on its first use and caches it, but workers that meet a kind at the
// same time each compile it (two team units built together compiled every schema twice: 0.8
// CPU-seconds instead of 0.4). Later objects of a warm kind pass without waiting. Only the order
// of the calls changes, never their result.
type kindGates struct {
	mu    sync.Mutex
	gates map[string]*kindGate
}

type kindGate struct {
	mu   sync.Mutex
	warm atomic.Bool
}

func newKindGates() *kindGates { return &kindGates{gates: map[string]*kindGate{}} }

func (g *kindGates) do(key string, fn func()) {
	g.mu.Lock()
	gate, ok := g.gates[key]
	if !ok {
		gate = &kindGate{}
		g.gates[key] = gate
	}
	g.mu.Unlock()
	if gate.warm.Load() {
		fn()
		return
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	fn()
	gate.warm.Store(true)
}

// checker is kubeconform's validator (nil: -validate=false) with the documents a run with the
// same flags and schema files found valid (-valid-docs, by SHA-256 of their bytes). kubeconform's
// verdict on a document is a function of its bytes, the flags and the schema files alone
// (ValidateResource reads nothing else), so such a document is valid again without compiling
// its kind's schema: each kind's first use compiles it with a new compiler that loads and checks
// every schema file the kind's refs reach (kubeconform pkg/validator/validator.go
// downloadSchema; the built-in definitions are laid out a file each for this,
// generator/toolchain/crdschemas.py split_k8s_definitions). The caller keeps the digests by the
// flags and schemas they were made with (validate/run.py).
type checker struct {
	v     validator.Validator
	gates *kindGates
	known map[[sha256.Size]byte]bool
}

func readKnown(path string) (map[[sha256.Size]byte]bool, error) {
	known := map[[sha256.Size]byte]bool{}
	if path == "" {
		return known, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Fields(string(data)) {
		var sum [sha256.Size]byte
		// hex.Decode writes past sum on a longer line: its length is checked first
		if len(line) != hex.EncodedLen(sha256.Size) {
			return nil, fmt.Errorf("%s: not a SHA-256 in hex: %q", path, line)
		}
		if n, err := hex.Decode(sum[:], []byte(line)); err != nil || n != sha256.Size {
			return nil, fmt.Errorf("%s: not a SHA-256 in hex: %q", path, line)
		}
		known[sum] = true
	}
	return known, nil
}

func build(root, unit string, opts *krusty.Options, c *checker, withYAML bool) unitResult {
	start := time.Now()
	res := unitResult{Unit: unit, Objects: []json.RawMessage{}, Schema: []schemaResult{}, Valid: []string{}}
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(root, unit))
	if err == nil {
		var yml []byte
		if yml, err = m.AsYaml(); err == nil {
			res.OK = true
			if withYAML {
				text := string(yml)
				res.YAML = &text
			}
			res.Objects, res.Schema, res.Valid, err = check(unit, yml, c)
		}
	}
	if err != nil {
		res.OK = false
		res.Error = err.Error()
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

// check splits the build output as kubeconform does with a file (findResourcesInReader in
// kubeconform pkg/resource/files.go: each document's text copied, empty ones skipped, a List
// expanded, an empty resource when there is none), converts each document to JSON for the
// caller, and keeps kubeconform's verdict on every object that is not valid. Not
// validator.Validate: its stream reader hands out scanner.Bytes() without a copy, which later
// documents overwrite once the output passes half the 4 MB buffer (kubeconform PR #363).
func check(unit string, yml []byte, c *checker) ([]json.RawMessage, []schemaResult, []string, error) {
	objects := []json.RawMessage{}
	problems := []schemaResult{}
	valid := []string{}
	var docs []document
	scanner := bufio.NewScanner(bytes.NewReader(yml))
	// kubeconform starts at 4 MB; the scanner grows its buffer to the largest document anyway,
	// and each document is copied out, so a small start gives the same documents. Allocating and
	// clearing 4 MB for every unit was a sixth of the helper's CPU on small team units.
	scanner.Buffer(make([]byte, 0, 64*1024), 256*1024*1024)
	scanner.Split(resource.SplitYAMLDocument)
	for scanner.Scan() {
		if len(scanner.Text()) > 0 {
			res := resource.Resource{Path: unit, Bytes: []byte(scanner.Text())}
			if data, err := yaml.YAMLToJSON(res.Bytes); err == nil {
				if key, ok := plainSignature(data); ok {
					docs = append(docs, document{res: res, json: data, gate: key})
					continue
				}
			}
			for _, r := range res.Resources() {
				docs = append(docs, document{res: r})
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("reading the build output: %w", err)
	}
	if len(docs) == 0 {
		docs = append(docs, document{res: resource.Resource{Path: unit, Bytes: []byte{}}})
	}
	for _, doc := range docs {
		res := doc.res
		if doc.json != nil {
			objects = append(objects, doc.json)
		} else if err := appendObject(&objects, res.Bytes); err != nil {
			return nil, nil, nil, err
		}
		if c.v == nil {
			continue
		}
		sum := sha256.Sum256(res.Bytes)
		if c.known[sum] {
			valid = append(valid, hex.EncodeToString(sum[:]))
			continue
		}
		var r validator.Result
		validate := func() { r = c.v.ValidateResource(res) }
		if doc.gate != "" {
			c.gates.do(doc.gate, validate)
		} else if sig, err := res.Signature(); err == nil {
			c.gates.do(sig.Version+"/"+sig.Kind, validate) // kubeconform's cache key, less the version
		} else {
			validate()
		}
		if r.Status == validator.Valid {
			valid = append(valid, hex.EncodeToString(sum[:]))
			continue
		}
		if r.Status == validator.Skipped || r.Status == validator.Empty {
			continue
		}
		sig, _ := r.Resource.Signature()
		msg := ""
		if r.Err != nil {
			msg = r.Err.Error()
		}
		problems = append(problems, schemaResult{
			Kind: sig.Kind, Name: sig.Name, Version: sig.Version,
			Status: statusName(r.Status), Msg: msg, ValidationErrors: r.ValidationErrors,
		})
	}
	return objects, problems, valid, nil
}

// A document of the build output as kubeconform will validate it; json and gate are set when
// plainSignature vouched for it (its JSON for the caller, its kind's gate key).
type document struct {
	res  resource.Resource
	json json.RawMessage
	gate string
}

// plainSignature says whether a document (its JSON, as appendObject makes it) may skip
// kubeconform's Resource.Resources(), and returns its kind's gate key ("apiVersion/kind").
//
// Resources() (kubeconform v0.7.0 pkg/resource/resource.go) calls Signature(), which parses the
// whole document again with sigs.k8s.io/yaml's Unmarshal (yaml.v2, to JSON, then
// encoding/json into a struct of apiVersion, kind and metadata's name, namespace and
// generateName, matching keys case-insensitively, turning a number or boolean into a string
// where the field is one: sigs.k8s.io/yaml v1.5.0 yaml.go convertToJSONableObject), only to
// expand a List, and caches the signature in the Resource. ValidateResource (pkg/validator/
// validator.go) then reads the signature through SignatureFromMap on the map UnmarshalStrict
// made, which returns that cached one, else computes it from the map: exact keys, string values
// only, and generateName used when it is any string, even empty. So without Resources() a
// document validates the same exactly when both ways give one signature and it is no List:
// every key they read spelled exactly (no other case of it), apiVersion and kind non-empty
// strings, metadata absent, null or an object, name and namespace absent or strings,
// generateName absent or a non-empty string. YAMLToJSON is the same parse as Signature's less
// the target (yaml.v2 Unmarshal into interface{}), and a value that is a JSON string here was a
// YAML string, which the target leaves as it is. Any other document goes through Resources(),
// as before; the verdict printed for a problem calls r.Resource.Signature(), which is then the
// one SignatureFromMap cached, equal by the above.
func plainSignature(data []byte) (string, bool) {
	if len(data) == 0 || data[0] != '{' {
		return "", false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || !exactKeys(top, "apiVersion", "kind", "metadata") {
		return "", false
	}
	kind, okKind := jsonString(top["kind"])
	version, okVersion := jsonString(top["apiVersion"])
	if !okKind || !okVersion || kind == "" || version == "" || strings.ToLower(kind) == "list" {
		return "", false
	}
	if raw, ok := top["metadata"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(raw, &meta) != nil || !exactKeys(meta, "name", "namespace", "generateName") {
			return "", false
		}
		for _, key := range []string{"name", "namespace"} {
			if value, ok := meta[key]; ok {
				if _, isString := jsonString(value); !isString {
					return "", false
				}
			}
		}
		if value, ok := meta["generateName"]; ok {
			if name, isString := jsonString(value); !isString || name == "" {
				return "", false
			}
		}
	}
	return version + "/" + kind, true
}

// exactKeys: no key of m is another spelling of one of names that encoding/json would match
// to it. encoding/json matches a key to a field by Unicode simple case folding (Go's
// encoding/json/fold.go foldName: each rune to the smallest of its fold orbit), which is what
// strings.EqualFold compares.
func exactKeys(m map[string]json.RawMessage, names ...string) bool {
	for key := range m {
		for _, name := range names {
			if key != name && strings.EqualFold(key, name) {
				return false
			}
		}
	}
	return true
}

// jsonString is a JSON value's text when it is a string.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func appendObject(objects *[]json.RawMessage, doc []byte) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil
	}
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return fmt.Errorf("reading the build output: %w", err)
	}
	if len(data) > 0 && data[0] == '{' {
		*objects = append(*objects, data)
	}
	return nil
}

func main() {
	root := flag.String("root", ".", "folder the units are relative to")
	workers := flag.Int("workers", runtime.NumCPU(), "units built at once")
	withYAML := flag.Bool("yaml", false, "include each unit's build output as text")
	// krusty keeps the OpenAPI schema a kustomization's `openapi:` sets in package globals: units
	// that read one are built one at a time from a reset schema, as separate kustomize processes
	// would. The caller knows which kustomizations its units read (validate/run.py); walking the
	// whole root to find out here cost a quarter of a second on every run at 10,000 units.
	serial := flag.Bool("serial", false, "build one unit at a time, the OpenAPI schema reset before each (a unit reads a kustomization that sets openapi:)")
	validate := flag.Bool("validate", true, "validate the objects against the schemas")
	strict := flag.Bool("strict", false, "kubeconform -strict: unknown fields and duplicate keys are errors")
	k8s := flag.String("kubernetes-version", "master", "kubeconform -kubernetes-version")
	validDocs := flag.String("valid-docs", "", "a file of the SHA-256 (hex, one a line) of documents a run with the same flags and schema files found valid: not validated again")
	var locations schemaLocations
	flag.Var(&locations, "schema-location", "kubeconform -schema-location (repeatable)")
	flag.Parse()
	// Builds allocate much short-lived memory: collect less often (a third less CPU on the
	// benchmark fleet) while a soft limit keeps the heap small. GOGC or GOMEMLIMIT override.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(800)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(384 << 20)
	}
	// Profiling, as kubeconform offers it (KUBECONFORM_CPUPROFILE_FILE): for performance work.
	if path := os.Getenv("KBUILD_CPUPROFILE_FILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kbuild:", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "kbuild:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}

	units := flag.Args()
	if len(units) == 0 {
		scanner := bufio.NewScanner(os.Stdin)
		for scanner.Scan() {
			if line := strings.TrimSpace(scanner.Text()); line != "" {
				units = append(units, line)
			}
		}
	}

	var v validator.Validator
	if *validate {
		var err error
		v, err = validator.New(locations, validator.Opts{
			KubernetesVersion: *k8s,
			Strict:            *strict,
			SkipKinds:         map[string]struct{}{},
			RejectKinds:       map[string]struct{}{},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "kbuild:", err)
			os.Exit(2)
		}
	}

	known, err := readKnown(*validDocs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbuild:", err)
		os.Exit(2)
	}
	c := &checker{v: v, gates: newKindGates(), known: known}
	opts := kustomizeOptions()
	n := *workers
	if *serial || n < 1 {
		n = 1
	}
	// Parse the built-in OpenAPI schema once before the workers start (kustomize issue #5805).
	openapi.IsCertainlyClusterScoped(kyaml.TypeMeta{})

	jobs := make(chan string)
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for unit := range jobs {
				if *serial {
					openapi.ResetOpenAPI()
				}
				res := build(*root, unit, opts, c, *withYAML)
				mu.Lock()
				if err := enc.Encode(res); err != nil {
					fmt.Fprintln(os.Stderr, "kbuild:", err)
					os.Exit(2)
				}
				out.Flush() // one line per unit as soon as it is done: the caller shows progress
				mu.Unlock()
			}
		}()
	}
	for _, unit := range units {
		jobs <- unit
	}
	close(jobs)
	wg.Wait()
}
