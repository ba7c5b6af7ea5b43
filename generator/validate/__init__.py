"""validate: the values and their checks, drift of the committed tree, then every stage in
validate/stages/ (kustomize + kubeconform, promtool, NFD, Kueue, kube-scheduler) and the manifest
rules on what Argo CD will apply (run.py)."""
