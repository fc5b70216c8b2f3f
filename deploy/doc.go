// Package deploy holds the Kubernetes manifests that install the netpol
// agent (kubectl apply -k deploy/). It has no code: its tests check the
// manifests, statically and against a real API server.
package deploy
