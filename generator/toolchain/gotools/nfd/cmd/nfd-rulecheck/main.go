// Command nfd-rulecheck runs Node Feature Discovery's own rule code on NodeFeatureRule and
// NodeFeature objects, without a cluster, and prints as JSON what nfd-master would do per node.
//
//	nfd-rulecheck FILE...   (multi-document YAML or JSON; "-" reads standard input)
//
// Every NodeFeatureRule is validated with NFD's validate package (as `kubectl nfd validate` does,
// after nfd-master's prefixing of unprefixed names), and every rule is executed against every
// NodeFeature with nodefeaturerule.Execute, the function nfd-master calls. The per-node result
// follows nfd-master v0.19.0 (pkg/nfd-master/nfd-master.go): NodeFeatureRules in name order, rule
// labels fed back as rule.matched for later rules, unprefixed label names put under
// feature.node.kubernetes.io (addNsToMapKeys), labels kept only if validate.Label accepts them
// (filterFeatureLabel, default configuration: no extraLabelNs, no denyLabelNs), taints kept only
// if validate.Taint accepts them (filterTaints, with -enable-taints). What nfd-master would refuse
// is listed with the rule that produced it, so the caller can point at the values behind it.
//
// Exit code 0 when the input was read (findings are in the JSON), 2 when it could not be.
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
	"path"
	"runtime/debug"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"
	"sigs.k8s.io/node-feature-discovery/pkg/apis/nfd/nodefeaturerule"
	"sigs.k8s.io/node-feature-discovery/pkg/apis/nfd/validate"
)

// Refusal is something nfd-master would not apply, and why.
type Refusal struct {
	NodeFeatureRule string `json:"nodeFeatureRule"`
	Rule            string `json:"rule"`
	Kind            string `json:"kind"` // label, taint, annotation, extendedResource, rule
	Key             string `json:"key,omitempty"`
	Value           string `json:"value,omitempty"`
	Error           string `json:"error"`
}

// Taint as nfd-master would set it.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// NodeResult is what nfd-master would do to one node.
type NodeResult struct {
	Labels       map[string]string `json:"labels"`
	Taints       []Taint           `json:"taints"`
	MatchedRules []string          `json:"matchedRules"`
	Refused      []Refusal         `json:"refused"`
}

// Result is the whole output.
type Result struct {
	NFDVersion string                `json:"nfdVersion"`
	Rules      []Refusal             `json:"ruleErrors"`
	Nodes      map[string]NodeResult `json:"nodes"`
}

func main() {
	enableTaints := flag.Bool("enable-taints", true, "as nfd-master -enable-taints (taints are dropped without it)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: nfd-rulecheck [-enable-taints=false] FILE... (\"-\" for stdin)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var rules []nfdv1alpha1.NodeFeatureRule
	var nodes []nfdv1alpha1.NodeFeature
	for _, name := range flag.Args() {
		r, n, err := readFile(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "nfd-rulecheck: %s: %v\n", name, err)
			os.Exit(2)
		}
		rules = append(rules, r...)
		nodes = append(nodes, n...)
	}
	out := run(rules, nodes, *enableTaints)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "nfd-rulecheck: %v\n", err)
		os.Exit(2)
	}
}

func readFile(name string) ([]nfdv1alpha1.NodeFeatureRule, []nfdv1alpha1.NodeFeature, error) {
	var in io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		in = f
	}
	var rules []nfdv1alpha1.NodeFeatureRule
	var nodes []nfdv1alpha1.NodeFeature
	reader := k8syaml.NewYAMLReader(bufio.NewReader(in))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, nil, err
		}
		switch head.Kind {
		case "NodeFeatureRule":
			var r nfdv1alpha1.NodeFeatureRule
			if err := yaml.UnmarshalStrict(doc, &r); err != nil {
				return nil, nil, fmt.Errorf("NodeFeatureRule: %w", err)
			}
			rules = append(rules, r)
		case "NodeFeature":
			var n nfdv1alpha1.NodeFeature
			if err := yaml.UnmarshalStrict(doc, &n); err != nil {
				return nil, nil, fmt.Errorf("NodeFeature: %w", err)
			}
			nodes = append(nodes, n)
		}
	}
	return rules, nodes, nil
}

func run(rules []nfdv1alpha1.NodeFeatureRule, nodes []nfdv1alpha1.NodeFeature, enableTaints bool) Result {
	// nfd-master processes NodeFeatureRules sorted by name (processNodeFeatureRule).
	sort.Slice(rules, func(i, j int) bool { return rules[i].Name < rules[j].Name })
	out := Result{NFDVersion: nfdVersion(), Rules: []Refusal{}, Nodes: map[string]NodeResult{}}
	for _, nfr := range rules {
		out.Rules = append(out.Rules, validateRules(nfr)...)
	}
	for _, nf := range nodes {
		node := nf.Labels[nfdv1alpha1.NodeFeatureObjNodeNameLabel]
		if node == "" {
			node = nf.Name
		}
		out.Nodes[node] = evaluate(rules, nf.Spec, enableTaints)
	}
	return out
}

// validateRules checks each rule as `kubectl nfd validate` does (pkg/kubectl-nfd/validate.go),
// with label, annotation and extended resource names prefixed first as nfd-master does. Each
// label, taint, annotation and extended resource is validated on its own so that a refusal names
// its key; the messages are NFD's own.
func validateRules(nfr nfdv1alpha1.NodeFeatureRule) []Refusal {
	var out []Refusal
	add := func(rule, kind, key, value string, errs []error) {
		for _, err := range errs {
			out = append(out, Refusal{NodeFeatureRule: nfr.Name, Rule: rule, Kind: kind, Key: key, Value: value, Error: err.Error()})
		}
	}
	each := func(rule, kind string, in map[string]string, check func(map[string]string) []error) {
		keys := make([]string, 0, len(in))
		for k := range in {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(rule, kind, k, in[k], check(map[string]string{k: in[k]}))
		}
	}
	for _, rule := range nfr.Spec.Rules {
		if rule.Name == "" {
			add(rule.Name, "rule", "", "", []error{errors.New("rule name cannot be empty")})
		}
		each(rule.Name, "label", placeholders(addNsToMapKeys(rule.Labels, nfdv1alpha1.FeatureLabelNs)), validate.Labels)
		each(rule.Name, "annotation", addNsToMapKeys(rule.Annotations, nfdv1alpha1.FeatureAnnotationNs), validate.Annotations)
		each(rule.Name, "extendedResource", placeholders(addNsToMapKeys(rule.ExtendedResources, nfdv1alpha1.ExtendedResourceNs)), validate.ExtendedResources)
		for _, t := range rule.Taints {
			add(rule.Name, "taint", t.Key, t.Value, validate.Taints([]corev1.Taint{t}))
		}
		add(rule.Name, "rule", "", "", validate.Template(rule.LabelsTemplate))
		add(rule.Name, "rule", "", "", validate.Template(rule.VarsTemplate))
		add(rule.Name, "rule", "", "", validate.MatchFeatures(rule.MatchFeatures))
		add(rule.Name, "rule", "", "", validate.MatchAny(rule.MatchAny))
	}
	return out
}

// placeholders replaces dynamic values ("@domain.feature.element") as kubectl nfd validate does.
func placeholders(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if strings.HasPrefix(v, "@") {
			v = "0"
		}
		out[k] = v
	}
	return out
}

func evaluate(rules []nfdv1alpha1.NodeFeatureRule, spec nfdv1alpha1.NodeFeatureSpec, enableTaints bool) NodeResult {
	features := spec.Features.DeepCopy()
	res := NodeResult{Labels: map[string]string{}, Taints: []Taint{}, MatchedRules: []string{}, Refused: []Refusal{}}
	// Labels published by the worker itself, prefixed as nfd-master does.
	origin := map[string][2]string{}
	for k, v := range addNsToMapKeys(spec.Labels, nfdv1alpha1.FeatureLabelNs) {
		res.Labels[k] = v
	}
	for _, nfr := range rules {
		for i := range nfr.Spec.Rules {
			rule := &nfr.Spec.Rules[i]
			ruleOut, err := nodefeaturerule.Execute(rule, features, true)
			if err != nil {
				res.Refused = append(res.Refused, Refusal{NodeFeatureRule: nfr.Name, Rule: rule.Name, Kind: "rule", Error: "failed to process rule: " + err.Error()})
				continue
			}
			if ruleOut.MatchStatus == nil || !ruleOut.MatchStatus.IsMatch {
				continue
			}
			res.MatchedRules = append(res.MatchedRules, nfr.Name+"/"+rule.Name)
			for k, v := range addNsToMapKeys(ruleOut.Labels, nfdv1alpha1.FeatureLabelNs) {
				res.Labels[k] = v
				origin[k] = [2]string{nfr.Name, rule.Name}
			}
			for _, t := range ruleOut.Taints {
				if err := validate.Taint(&t); err != nil {
					res.Refused = append(res.Refused, Refusal{NodeFeatureRule: nfr.Name, Rule: rule.Name, Kind: "taint", Key: t.Key, Value: t.Value, Error: "ignoring taint: " + err.Error()})
					continue
				}
				if enableTaints {
					res.Taints = append(res.Taints, Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
				}
			}
			features.InsertAttributeFeatures(nfdv1alpha1.RuleBackrefDomain, nfdv1alpha1.RuleBackrefFeature, ruleOut.Labels)
			features.InsertAttributeFeatures(nfdv1alpha1.RuleBackrefDomain, nfdv1alpha1.RuleBackrefFeature, ruleOut.Vars)
		}
	}
	// filterFeatureLabels: drop what validate.Label refuses (dynamic values resolved first).
	for k, v := range res.Labels {
		value := v
		var err error
		if strings.HasPrefix(v, "@") {
			value, err = dynamicValue(v, features)
		}
		if err == nil {
			err = validate.Label(k, value)
		}
		if err != nil {
			o := origin[k]
			res.Refused = append(res.Refused, Refusal{NodeFeatureRule: o[0], Rule: o[1], Kind: "label", Key: k, Value: v, Error: "ignoring label: " + err.Error()})
			delete(res.Labels, k)
			continue
		}
		res.Labels[k] = value
	}
	sort.Slice(res.Refused, func(i, j int) bool {
		a, b := res.Refused[i], res.Refused[j]
		return a.NodeFeatureRule+a.Rule+a.Kind+a.Key < b.NodeFeatureRule+b.Rule+b.Kind+b.Key
	})
	return res
}

// addNsToMapKeys is nfd-master's (pkg/nfd-master/nfd-master.go, unexported there): unprefixed
// keys get nsToAdd, and a prefixed key wins over the same name unprefixed.
func addNsToMapKeys(in map[string]string, nsToAdd string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if strings.Contains(k, "/") {
			out[k] = v
		} else {
			fqn := path.Join(nsToAdd, k)
			if _, ok := in[fqn]; !ok {
				out[fqn] = v
			}
		}
	}
	return out
}

// dynamicValue is nfd-master's getDynamicValue: "@domain.feature.element" reads an attribute.
func dynamicValue(value string, features *nfdv1alpha1.Features) (string, error) {
	split := strings.SplitN(value[1:], ".", 3)
	if len(split) != 3 {
		return "", fmt.Errorf("value %s is not in the form of '@domain.feature.element'", value)
	}
	set, ok := features.Attributes[split[0]+"."+split[1]]
	if !ok {
		return "", fmt.Errorf("feature %s.%s not found", split[0], split[1])
	}
	element, ok := set.Elements[split[2]]
	if !ok {
		return "", fmt.Errorf("element %s not found on feature %s.%s", split[2], split[0], split[1])
	}
	return element, nil
}

// nfdVersion is the NFD module version this binary was built with (its Go build info).
func nfdVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "sigs.k8s.io/node-feature-discovery" {
				return dep.Version
			}
		}
	}
	return "unknown"
}
