// Command podsecurity evaluates pod templates against Kubernetes Pod Security Standards with the
// upstream admission code (k8s.io/pod-security-admission/policy), for the tests.
//
// Input (stdin): YAML documents, the rendered objects. Each Namespace's
// pod-security.kubernetes.io/enforce label is the level its pods are checked at; pods in a
// namespace the input does not define are checked at -level. Output (stdout): one JSON object per
// pod template: {"kind", "namespace", "name", "level", "allowed", "reasons"}.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

type result struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Level     string   `json:"level"`
	Allowed   bool     `json:"allowed"`
	Reasons   []string `json:"reasons"`
}

// templates returns the pod templates an object carries (Pod itself, workload controllers,
// CronJob, and Volcano Job tasks).
func templates(obj object) ([]corev1.PodTemplateSpec, error) {
	if len(obj.Spec) == 0 {
		return nil, nil
	}
	switch obj.Kind {
	case "Pod":
		var spec corev1.PodSpec
		err := json.Unmarshal(obj.Spec, &spec)
		return []corev1.PodTemplateSpec{{Spec: spec}}, err
	case "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "ReplicationController":
		var spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		}
		err := json.Unmarshal(obj.Spec, &spec)
		return []corev1.PodTemplateSpec{spec.Template}, err
	case "Job":
		var spec struct {
			Template *corev1.PodTemplateSpec `json:"template"`
			Tasks    []struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"tasks"` // batch.volcano.sh/v1alpha1 Job
		}
		if err := json.Unmarshal(obj.Spec, &spec); err != nil {
			return nil, err
		}
		var out []corev1.PodTemplateSpec
		if spec.Template != nil {
			out = append(out, *spec.Template)
		}
		for _, task := range spec.Tasks {
			out = append(out, task.Template)
		}
		return out, nil
	case "CronJob":
		var spec struct {
			JobTemplate struct {
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			} `json:"jobTemplate"`
		}
		err := json.Unmarshal(obj.Spec, &spec)
		return []corev1.PodTemplateSpec{spec.JobTemplate.Spec.Template}, err
	}
	return nil, nil
}

func run(in io.Reader, out io.Writer, defaultLevel string) error {
	decoder := yaml.NewYAMLOrJSONDecoder(bufio.NewReader(in), 4096)
	var objs []object
	for {
		var obj object
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if obj.Kind != "" {
			objs = append(objs, obj)
		}
	}
	levels := map[string]string{}
	for _, obj := range objs {
		if obj.Kind == "Namespace" {
			levels[obj.Metadata.Name] = obj.Metadata.Labels[api.EnforceLevelLabel]
		}
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	for _, obj := range objs {
		tmpls, err := templates(obj)
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name, err)
		}
		text, ok := levels[obj.Metadata.Namespace]
		if !ok || text == "" {
			text = defaultLevel
		}
		level, err := api.ParseLevel(text)
		if err != nil {
			return err
		}
		for _, tmpl := range tmpls {
			checks := evaluator.EvaluatePod(
				api.LevelVersion{Level: level, Version: api.LatestVersion()}, &tmpl.ObjectMeta, &tmpl.Spec)
			agg := policy.AggregateCheckResults(checks)
			reasons := []string{}
			for _, c := range checks {
				if !c.Allowed {
					reasons = append(reasons, c.ForbiddenReason+": "+c.ForbiddenDetail)
				}
			}
			if err := enc.Encode(result{obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name,
				string(level), agg.Allowed, reasons}); err != nil {
				return err
			}
		}
	}
	return nil
}

func main() {
	level := flag.String("level", "restricted", "level for pods whose namespace is not in the input")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *level); err != nil {
		fmt.Fprintln(os.Stderr, "podsecurity:", err)
		os.Exit(2)
	}
}
