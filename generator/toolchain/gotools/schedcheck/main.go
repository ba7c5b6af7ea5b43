// Command schedcheck decodes and validates KubeSchedulerConfiguration files with the
// kube-scheduler's own code: the strict, defaulting decoder of its config scheme and
// ValidateKubeSchedulerConfiguration (k8s.io/kubernetes pkg/scheduler/apis/config), exactly what
// kube-scheduler --config runs before it starts (cmd/kube-scheduler/app/options/configfile.go).
//
// ValidateKubeSchedulerConfiguration does not reach NodeResourcesFit's arguments (its table keys
// them as "NodeResourcesFitArgs", not by the plugin's name); the plugin validates them itself
// when the scheduler builds its profiles (pkg/scheduler/framework/plugins/noderesources/fit.go,
// NewFit), so this runs that same ValidateNodeResourcesFitArgs on them too.
//
// Usage: schedcheck [-json] FILE...
//
// Without -json it prints "FILE: error" per problem. With -json it prints one JSON line per file,
// in argument order, valid or not: {"file", "kubernetesVersion", "errors": [{"field", "type",
// "message"}]} (field and type empty for a file the decoder refuses), so a caller checking many
// files in one process maps every verdict back to its file. Exit 0 valid, 1 invalid, 2 usage or
// an unreadable file.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

func load(data []byte) (*config.KubeSchedulerConfiguration, error) {
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("not a KubeSchedulerConfiguration: %s", gvk)
	}
	cfg.TypeMeta.APIVersion = gvk.GroupVersion().String()
	return cfg, nil
}

// check returns every problem kube-scheduler would refuse the configuration for at startup.
func check(cfg *config.KubeSchedulerConfiguration) []error {
	var errs []error
	if agg := validation.ValidateKubeSchedulerConfiguration(cfg); agg != nil {
		errs = append(errs, agg.Errors()...)
	}
	for i, profile := range cfg.Profiles {
		for j, pc := range profile.PluginConfig {
			args, ok := pc.Args.(*config.NodeResourcesFitArgs)
			if pc.Name != names.NodeResourcesFit || !ok {
				continue
			}
			path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
			if err := validation.ValidateNodeResourcesFitArgs(path, args); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// Problem is one error in -json output.
type Problem struct {
	Field   string `json:"field"`   // e.g. profiles[0].pluginConfig[0].args.scoringStrategy...
	Type    string `json:"type"`    // field.ErrorType, e.g. FieldValueInvalid
	Message string `json:"message"` // the error as kube-scheduler prints it
}

// Result is the -json verdict on one file.
type Result struct {
	File              string    `json:"file"`
	KubernetesVersion string    `json:"kubernetesVersion"`
	Errors            []Problem `json:"errors"`
}

// problems flattens aggregates (ValidateNodeResourcesFitArgs returns one) into field errors.
func problems(errs []error) []Problem {
	out := []Problem{}
	for _, err := range errs {
		var agg utilerrors.Aggregate
		if errors.As(err, &agg) {
			out = append(out, problems(agg.Errors())...)
			continue
		}
		var fe *field.Error
		if errors.As(err, &fe) {
			out = append(out, Problem{fe.Field, string(fe.Type), fe.Error()})
			continue
		}
		out = append(out, Problem{Message: err.Error()})
	}
	return out
}

func kubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func main() {
	asJSON := flag.Bool("json", false, "one JSON line per file")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: schedcheck [-json] FILE...") }
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	version := kubernetesVersion()
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	status := 0
	for _, path := range flag.Args() {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		var errs []error
		if cfg, err := load(data); err != nil {
			errs = []error{err}
		} else {
			errs = check(cfg)
		}
		if len(errs) > 0 {
			status = 1
		}
		if *asJSON {
			if err := enc.Encode(Result{path, version, problems(errs)}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			continue
		}
		for _, e := range errs {
			fmt.Fprintf(out, "%s: %v\n", path, e)
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(status)
}
