// Command kueuecheck runs Kueue's own admission webhooks on rendered Kueue objects, without a
// cluster, and prints one JSON line per Kueue object with the field errors Kueue would refuse it
// with.
//
//	kueuecheck FILE...   (multi-document YAML or JSON; "-" reads standard input)
//
// The webhooks are sigs.k8s.io/kueue v0.17.0 pkg/webhooks, called as the manager calls them for a
// create (controller-runtime's admission.Defaulter / admission.Validator, typed by object):
//
//   - ClusterQueue: ClusterQueueWebhook.Default, then ClusterQueueWebhook.ValidateCreate
//     (pkg/webhooks/clusterqueue_webhook.go v0.17.0; it calls ValidateClusterQueue: resource
//     names, borrowing and lending limits against the cohort, lendingLimit <= nominalQuota,
//     duplicate flavors and resources across resourceGroups, at most 256 flavors and 256 covered
//     resources in all groups, 512 flavor-resource pairs per group, preemption, fungibility,
//     fair sharing, namespaceSelector).
//   - ResourceFlavor: ResourceFlavorWebhook.Default, then ResourceFlavorWebhook.ValidateCreate
//     (pkg/webhooks/resourceflavor_webhook.go v0.17.0: nodeLabels as labels, nodeTaints keys and
//     values and unique by key and effect, toleration keys).
//   - Cohort: CohortWebhook.ValidateCreate (pkg/webhooks/cohort_webhook.go v0.17.0; Kueue
//     registers no defaulter for it).
//   - LocalQueue: Kueue v0.17.0 registers neither a defaulter nor a validator for it
//     (pkg/webhooks/webhooks.go setupWebhookForLocalQueue), so it is listed as not checked.
//
// The defaulters run first, as the API server calls mutating webhooks before validating ones.
// The webhooks serve kueue.x-k8s.io/v1beta2 only (the +kubebuilder:webhook markers in the files
// above); an object of another Kueue version is listed with an error, not converted.
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
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/webhooks"

	"accel-gitops/tools/kueuecheck/internal/checkio"
)

const group = "kueue.x-k8s.io"

// FieldError is one of Kueue's errors, as the API server would report it.
type FieldError = checkio.FieldError

// Result is the verdict on one Kueue object.
type Result struct {
	KueueVersion string       `json:"kueueVersion"`
	File         string       `json:"file"`
	Document     int          `json:"document"` // 0-based index in its file
	APIVersion   string       `json:"apiVersion"`
	Kind         string       `json:"kind"`
	Name         string       `json:"name"`
	Namespace    string       `json:"namespace,omitempty"`
	Webhook      string       `json:"webhook,omitempty"` // what ran, e.g. ClusterQueueWebhook
	Checked      bool         `json:"checked"`           // false: Kueue has no webhook for it
	Allowed      bool         `json:"allowed"`           // no error (nothing refuses it)
	Errors       []FieldError `json:"errors"`
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: kueuecheck FILE... (\"-\" for stdin)")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	// The webhooks log through the context's logger (ctrl.LoggerFrom); nothing to say here.
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	version := checkio.ModuleVersion("sigs.k8s.io/kueue")
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for _, name := range flag.Args() {
		docs, err := checkio.ReadDocs(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kueuecheck: %s: %v\n", name, err)
			os.Exit(2)
		}
		for i, doc := range docs {
			res, ok, err := check(ctx, doc)
			if err != nil {
				fmt.Fprintf(os.Stderr, "kueuecheck: %s: document %d: %v\n", name, i, err)
				os.Exit(2)
			}
			if !ok {
				continue
			}
			res.KueueVersion, res.File, res.Document = version, name, i
			if err := enc.Encode(res); err != nil {
				fmt.Fprintf(os.Stderr, "kueuecheck: %v\n", err)
				os.Exit(2)
			}
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "kueuecheck: %v\n", err)
		os.Exit(2)
	}
}

// check runs Kueue's webhooks on one document; ok is false for an object that is not Kueue's.
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
	if !strings.HasPrefix(head.APIVersion, group+"/") {
		return res, false, nil
	}
	res = Result{
		APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name,
		Namespace: head.Metadata.Namespace, Errors: []FieldError{},
	}
	if head.APIVersion != kueue.GroupVersion.String() {
		res.Checked = true
		res.Errors = append(res.Errors, FieldError{
			Type: string(field.ErrorTypeNotSupported), Field: "apiVersion", Value: head.APIVersion,
			Detail:  "Kueue v0.17.0's webhooks serve " + kueue.GroupVersion.String() + " only",
			Message: "apiVersion: Unsupported value: " + head.APIVersion,
		})
		return res, true, nil
	}
	var verr error
	switch head.Kind {
	case "ClusterQueue":
		w := &webhooks.ClusterQueueWebhook{}
		verr = admit(ctx, doc, &res, "ClusterQueueWebhook", &kueue.ClusterQueue{}, w.Default, w.ValidateCreate)
	case "ResourceFlavor":
		w := &webhooks.ResourceFlavorWebhook{}
		verr = admit(ctx, doc, &res, "ResourceFlavorWebhook", &kueue.ResourceFlavor{}, w.Default, w.ValidateCreate)
	case "Cohort":
		// Kueue registers no defaulter for Cohort.
		verr = admit(ctx, doc, &res, "CohortWebhook", &kueue.Cohort{}, nil, (&webhooks.CohortWebhook{}).ValidateCreate)
	default:
		// LocalQueue and the rest: no admission webhook of Kueue's own decides them.
		res.Allowed = true
		return res, true, nil
	}
	res.Errors = append(res.Errors, checkio.FieldErrors(verr)...)
	res.Allowed = len(res.Errors) == 0
	return res, true, nil
}

// admit decodes doc into obj and runs the webhook on it as the API server does for a create:
// the defaulter (when there is one), then the validator. A decoding refusal stops it there.
func admit[T any](
	ctx context.Context, doc []byte, res *Result, webhook string, obj T,
	defaulter func(context.Context, T) error,
	validator func(context.Context, T) (admission.Warnings, error),
) error {
	if res.Errors = checkio.Decode(doc, obj); len(res.Errors) > 0 {
		return nil
	}
	res.Webhook, res.Checked = webhook, true
	if defaulter != nil {
		if err := defaulter(ctx, obj); err != nil {
			return err
		}
	}
	_, err := validator(ctx, obj)
	return err
}
