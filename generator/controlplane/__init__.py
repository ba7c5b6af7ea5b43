"""The processes of a local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, KWOK, nfd-master) and of upstream controller managers beside it, a small API
client, and the pinned CRDs: start, stop and reset by rules the caller gives. Nothing here knows
the fleet (tests/project/test_layers.py holds that)."""
