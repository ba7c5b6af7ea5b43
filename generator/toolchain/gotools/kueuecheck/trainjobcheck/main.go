// Command trainjobcheck runs Kubeflow Trainer's own TrainJob admission check on rendered
// TrainJobs, without a cluster, against the ClusterTrainingRuntimes they name, and prints one JSON
// line per TrainJob with the errors Trainer's webhook would refuse it with (the format of
// workloadcheck's and kueuecheck's lines).
//
//	trainjobcheck -runtimes FILE FILE...   (multi-document YAML or JSON; "-" reads standard input)
//
// -runtimes names the ClusterTrainingRuntimes the cluster has (as Trainer's chart installs them).
//
// Trainer's validating webhook for a create (github.com/kubeflow/trainer/v2 v2.2.0
// pkg/webhooks/trainjob_webhook.go TrainJobValidator.ValidateCreate) looks the TrainJob's runtime
// up in the runtimes pkg/runtime/core.New registers and calls its ValidateObjects: the runtime
// must exist, and each framework plugin (torch, jax, xgboost, mpi, jobset, ...) checks the
// TrainJob against it, e.g. torch refuses env that torchrun reserves. The validator's runtimes
// are unexported, so this calls the same two steps itself. The runtimes read their objects
// through a client: here a fake one holding -runtimes, as Kueue's trainjob integration builds them
// (sigs.k8s.io/kueue v0.17.0 pkg/controller/jobs/trainjob: core.New with a nil configuration).
// Trainer's defaulting webhook only stamps the time of runtime patches, so it is not run.
//
// Exit code 0 when the input was read (refusals are in the JSON), 2 when it could not be.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"

	"accel-gitops/tools/kueuecheck/internal/checkio"
)

const module = "github.com/kubeflow/trainer/v2"

// FieldError is one of the check's errors, as the API server would report it.
type FieldError = checkio.FieldError

// Result is the verdict on one TrainJob.
type Result struct {
	Module     string       `json:"module"`
	Version    string       `json:"version"`
	File       string       `json:"file"`
	Document   int          `json:"document"`
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Name       string       `json:"name"`
	Namespace  string       `json:"namespace,omitempty"`
	Webhook    string       `json:"webhook,omitempty"`
	Checked    bool         `json:"checked"`
	Allowed    bool         `json:"allowed"`
	Errors     []FieldError `json:"errors"`
	Warnings   []string     `json:"warnings"`
}

// noIndex stands in for the manager's field indexer: the runtimes register indexes for their
// controllers' lists, which a create's validation does not use.
type noIndex struct{}

func (noIndex) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: trainjobcheck -runtimes FILE FILE... (\"-\" for stdin)")
	}
	runtimesFile := flag.String("runtimes", "", "the cluster's ClusterTrainingRuntimes (YAML)")
	flag.Parse()
	if flag.NArg() == 0 || *runtimesFile == "" {
		flag.Usage()
		os.Exit(2)
	}
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, trainer.AddToScheme, jobset.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fail(err)
		}
	}
	objs, err := runtimeObjects(*runtimesFile)
	if err != nil {
		fail(fmt.Errorf("%s: %w", *runtimesFile, err))
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	runtimes, err := runtimecore.New(ctx, cl, noIndex{}, nil)
	if err != nil {
		fail(err)
	}
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for _, name := range flag.Args() {
		docs, err := checkio.ReadDocs(name)
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		for i, doc := range docs {
			res, ok := check(ctx, runtimes, doc)
			if !ok {
				continue
			}
			res.File, res.Document = name, i
			if err := enc.Encode(res); err != nil {
				fail(err)
			}
		}
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "trainjobcheck: %v\n", err)
	os.Exit(2)
}

// runtimeObjects reads the ClusterTrainingRuntimes of a multi-document file.
func runtimeObjects(name string) ([]client.Object, error) {
	docs, err := checkio.ReadDocs(name)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, doc := range docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, err
		}
		if head.APIVersion != trainer.GroupVersion.String() || head.Kind != "ClusterTrainingRuntime" {
			continue
		}
		rt := &trainer.ClusterTrainingRuntime{}
		if err := yaml.Unmarshal(doc, rt); err != nil {
			return nil, err
		}
		out = append(out, rt)
	}
	return out, nil
}

// check validates one document if it is a TrainJob; ok is false for any other object.
func check(ctx context.Context, runtimes map[string]trainerruntime.Runtime, doc []byte) (Result, bool) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil ||
		head.APIVersion != trainer.GroupVersion.String() || head.Kind != "TrainJob" {
		return Result{}, false
	}
	res := Result{
		Module: module, Version: checkio.ModuleVersion(module), APIVersion: head.APIVersion,
		Kind: head.Kind, Errors: []FieldError{}, Warnings: []string{},
	}
	job := &trainer.TrainJob{}
	if res.Errors = checkio.Decode(doc, job); len(res.Errors) > 0 {
		return res, true
	}
	res.Name, res.Namespace = job.Name, job.Namespace
	res.Webhook, res.Checked = "TrainJobValidator", true
	// pkg/webhooks/trainjob_webhook.go ValidateCreate, v2.2.0.
	key := trainerruntime.RuntimeRefToRuntimeRegistryKey(job.Spec.RuntimeRef)
	rt, found := runtimes[key]
	if !found {
		msg := fmt.Sprintf("unsupported runtime: %s", key)
		res.Errors = []FieldError{{Detail: msg, Message: msg}}
		return res, true
	}
	warnings, errs := rt.ValidateObjects(ctx, nil, job)
	res.Warnings = append(res.Warnings, warnings...)
	res.Errors = append(res.Errors, checkio.FieldErrors(errs.ToAggregate())...)
	res.Allowed = len(res.Errors) == 0
	return res, true
}
