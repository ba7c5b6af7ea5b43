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
// Usage: schedcheck FILE...; prints "FILE: error" per problem; exit 0 valid, 1 invalid, 2 usage.
package main

import (
	"fmt"
	"os"

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

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: schedcheck FILE...")
		os.Exit(2)
	}
	status := 0
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		cfg, err := load(data)
		if err == nil {
			for _, e := range check(cfg) {
				fmt.Printf("%s: %v\n", path, e)
				status = 1
			}
			continue
		}
		fmt.Printf("%s: %v\n", path, err)
		status = 1
	}
	os.Exit(status)
}
