#!/usr/bin/env bash
# run.sh measures one flow at 1k pods / 990 NetworkPolicies / 10 admin
# policies (hack/synth -size 1k) with netpol and the two peers, in one
# run: the CPU time (task-clock, from perf stat) of each tool's one-flow
# command, the tools taking turns round after round so that a machine
# whose speed drifts (a VM's neighbours) moves all three alike.
#
#   hack/oneflow-bench/run.sh --policy-assistant-src DIR [--rounds N]
#
# The flow: kube-system/coredns-0 -> kube-system/coredns-1 on 53/udp.
#   netpol:           netpol explain -q -f 1k.yaml ...
#   np-guard:         netpolicy eval -q --dirpath DIR ... (github.com/np-guard/netpol-analyzer
#                     $NPGUARD_VERSION, v1.4.2, from the Go module proxy)
#   policy-assistant: policy-assistant analyze --mode walkthrough --policy-path DIR
#                     --traffic-path traffic.json; built from DIR, the cmd/policy-assistant
#                     directory of a kubernetes-sigs/network-policy-api checkout (its
#                     module path is not its directory, so the proxy has no version of
#                     it). It reads one policy per file, wants spec.policyTypes set (as
#                     the API server sets it) and takes the two pods as labels in a
#                     traffic file: run.sh writes those from the dump. It reads the
#                     policies only, netpol the whole dump.
#
# Prints the median and the mean CPU per run of each tool, the ratios of
# the medians, and the load average before and after: keep figures from
# an idle machine only. Needs perf, python3 with PyYAML, go.
set -euo pipefail

rounds=30
pa_src=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--policy-assistant-src) pa_src=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ -n $pa_src && -f $pa_src/go.mod ]] || { echo "run.sh: --policy-assistant-src DIR: the cmd/policy-assistant directory of a network-policy-api checkout" >&2; exit 2; }
command -v perf >/dev/null || { echo "run.sh: needs perf" >&2; exit 2; }

root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/netpol-oneflow.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "building netpol, np-guard and policy-assistant (not timed)" >&2
(cd "$root" && go build -o "$work/netpol" ./cmd/netpol && go run ./hack/synth -size 1k >"$work/1k.yaml")
mkdir -p "$work/npg" "$work/d1k" "$work/pa"
printf 'module peers\n\ngo 1.24\n' >"$work/npg/go.mod"
(cd "$work/npg" && go get "github.com/np-guard/netpol-analyzer/cmd/netpolicy@${NPGUARD_VERSION:-v1.4.2}" >/dev/null 2>&1 &&
	go build -o "$work/netpolicy" github.com/np-guard/netpol-analyzer/cmd/netpolicy)
(cd "$pa_src" && go build -o "$work/policy-assistant" ./cmd/policy-assistant)
cp "$work/1k.yaml" "$work/d1k/"

# policy-assistant's input: each policy in a file of its own, policyTypes
# defaulted as the API server does; the two pods as labels.
python3 - "$work/1k.yaml" "$work/pa" "$work/traffic.json" <<'PY'
import json, sys, yaml
dump, out, traffic = sys.argv[1:]
pods, namespaces, n = {}, {}, 0
for d in yaml.safe_load_all(open(dump)):
    if not d:
        continue
    kind, meta = d["kind"], d["metadata"]
    if kind == "Pod":
        pods[meta["namespace"] + "/" + meta["name"]] = meta.get("labels", {})
    elif kind == "Namespace":
        namespaces[meta["name"]] = dict(meta.get("labels", {}), **{"kubernetes.io/metadata.name": meta["name"]})
    elif kind in ("NetworkPolicy", "AdminNetworkPolicy", "BaselineAdminNetworkPolicy"):
        if kind == "NetworkPolicy" and "policyTypes" not in d["spec"]:
            d["spec"]["policyTypes"] = ["Ingress"] + (["Egress"] if d["spec"].get("egress") else [])
        yaml.safe_dump(d, open("%s/p%04d.yaml" % (out, n), "w"))
        n += 1
def peer(key):
    ns = key.split("/")[0]
    return {"Internal": {"PodLabels": pods[key], "NamespaceLabels": namespaces[ns], "Namespace": ns}}
json.dump([{"Source": peer("kube-system/coredns-0"), "Destination": peer("kube-system/coredns-1"),
            "Protocol": "UDP", "ResolvedPort": 53, "ResolvedPortName": "dns"}], open(traffic, "w"))
PY

netpol=("$work/netpol" explain -q -f "$work/1k.yaml" --from kube-system/coredns-0 --to kube-system/coredns-1 --port 53/udp)
npguard=("$work/netpolicy" eval -q --dirpath "$work/d1k" -n kube-system -s coredns-0 --destination-namespace kube-system -d coredns-1 -p 53 --protocol udp)
assistant=("$work/policy-assistant" analyze --mode walkthrough --policy-path "$work/pa" --traffic-path "$work/traffic.json")

# Each tool's answer, once: all three must say denied.
echo "answers:" >&2
"${netpol[@]}" | head -1 >&2
"${npguard[@]}" >&2
"${assistant[@]}" 2>/dev/null | grep -E 'Allowed|Denied' | sed 's/  */ /g' >&2

# cpu CMD...: the task-clock of one run, in ms.
cpu() { perf stat -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'; }

echo "load average before: $(uptime | sed 's/.*load average: //')"
for ((i = 0; i < rounds; i++)); do
	echo "netpol $(cpu "${netpol[@]}")"
	echo "np-guard $(cpu "${npguard[@]}")"
	echo "policy-assistant $(cpu "${assistant[@]}")"
done >"$work/samples"
echo "load average after: $(uptime | sed 's/.*load average: //')"
python3 - "$work/samples" "$rounds" <<'PY'
import statistics, sys
samples = {}
for line in open(sys.argv[1]):
    tool, ms = line.split()
    samples.setdefault(tool, []).append(float(ms))
med = {t: statistics.median(v) for t, v in samples.items()}
print("| tool | median CPU per run | mean | runs |")
print("|---|---|---|---|")
for t in ("netpol", "np-guard", "policy-assistant"):
    print("| %s | %.1f ms | %.1f ms | %d |" % (t, med[t], statistics.mean(samples[t]), len(samples[t])))
for t in ("np-guard", "policy-assistant"):
    print("%s / netpol: %.1fx" % (t, med[t] / med["netpol"]))
PY
