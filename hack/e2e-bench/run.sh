#!/usr/bin/env bash
# run.sh reproduces BENCHMARKS.md's "End to end" table: every command of
# netpol on the synthetic dumps of hack/synth, timed as a user runs it.
#
#   hack/e2e-bench/run.sh                  # every job, three runs each
#   hack/e2e-bench/run.sh --sizes 1k       # the 1k jobs only (a quick check)
#   hack/e2e-bench/run.sh --peers          # also np-guard's netpol-analyzer (and policy-assistant, if installable)
#   hack/e2e-bench/run.sh --sizes suggest --peers   # netpol suggest at 10k pods / 1M record lines, and Inspektor Gadget's advisor
#
# It generates the dumps into a temporary directory, builds netpol, runs
# each job --runs times (3) under /usr/bin/time -f '%e %U %S %M' and prints
# one markdown row per job: the run with the least CPU (user+sys), its wall
# time and its maximum RSS, and for the jobs that print a table the bytes
# they wrote (counted with wc -c, never stored). The load average (uptime)
# is printed before and after: figures are only worth keeping from an idle
# machine. A run that takes longer than --timeout seconds (600) is stopped
# and the job reported as not finished.
#
# --peers builds, into the temporary directory, np-guard's netpolicy
# (github.com/np-guard/netpol-analyzer, $NPGUARD_VERSION, v1.4.2) and
# policy-assistant (sigs.k8s.io/network-policy-api/policy-assistant,
# $POLICY_ASSISTANT_VERSION, latest) through the Go module proxy, each from
# a throw-away module (go install of a version asks the proxy for the
# module's version list, which some proxies refuse), and runs their one
# flow and all-pairs list on the 1k dump. Go's environment applies: where
# the checksum database cannot be reached, GOSUMDB=off (or GONOSUMDB) is
# the caller's choice to make.
#
# The size "suggest" is netpol suggest's job: 10k pods of 998 Deployments
# and a million lines of agents' record files (hack/suggest-bench); with
# --peers, Inspektor Gadget's network-policy advisor (v0.30.0,
# $IG_VERSION) on the same traffic as its trace events, through a
# throw-away main that loads them, generates and formats the policies.
set -euo pipefail

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	cat <<EOF

Options:
  --sizes LIST   comma-separated dump sizes to run the jobs of: 1k,2k,10k,100k,suggest (default all)
  --runs N       runs per job (default 3)
  --timeout S    seconds before a run is stopped (default 600)
  --peers        also the peers (see above)
EOF
}

sizes="1k,2k,10k,100k,suggest"
runs=3
timeout_s=600
peers=false
while [[ $# -gt 0 ]]; do
	case $1 in
	--sizes) sizes=$2; shift 2 ;;
	--sizes=*) sizes=${1#*=}; shift ;;
	--runs) runs=$2; shift 2 ;;
	--runs=*) runs=${1#*=}; shift ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--timeout=*) timeout_s=${1#*=}; shift ;;
	--peers) peers=true; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
for s in ${sizes//,/ }; do
	case $s in 1k | 2k | 10k | 100k | suggest) ;; *) echo "run.sh: --sizes: unknown size $s (want 1k, 2k, 10k, 100k or suggest)" >&2; exit 2 ;; esac
done
[[ -x /usr/bin/time ]] || { echo "run.sh: needs GNU time as /usr/bin/time" >&2; exit 2; }

# has SIZE: the size was asked for.
has() { [[ ",$sizes," == *",$1,"* ]]; }

root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/netpol-e2e.XXXXXX")
trap 'rm -rf "$work"' EXIT

loadavg() { uptime | sed 's/.*load average: //'; }

echo "netpol end to end, $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) CPUs, $(go version | cut -d' ' -f3-), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load average before: $(loadavg)"
echo

(cd "$root" && go build -o "$work/netpol" ./cmd/netpol && go build -o "$work/synth" ./hack/synth)
netpol=$work/netpol
dumps=()
for s in 1k 2k 10k 100k; do
	if has "$s" || { [[ $s == 1k ]] && $peers; }; then
		dumps+=("$s")
	fi
done
for s in "${dumps[@]}"; do
	"$work/synth" -size "$s" >"$work/$s.yaml"
done
if has 10k; then
	"$work/synth" -size 10k -pr >"$work/10k-pr.yaml"
fi
if has suggest; then
	(cd "$root" && go run ./hack/suggest-bench -out "$work/sb" -lines 1000000)
fi

# human BYTES: 1.6 GB, 13 MB, 0.8 MB, 612 B.
human() {
	awk -v b="$1" 'BEGIN {
		if (b >= 1e9) printf "%.1f GB", b / 1e9
		else if (b >= 1e7) printf "%.0f MB", b / 1e6
		else if (b >= 1e5) printf "%.1f MB", b / 1e6
		else printf "%d B", b }'
}

echo "| job | wall | CPU (user+sys) | max RSS | output |"
echo "|---|---|---|---|---|"

# job LABEL OK SHOW CMD...: runs CMD $runs times and prints its row. OK is
# the exit codes that are success (lint and diff exit 1 on findings or
# differences); SHOW=out puts the bytes written in the output column.
job() {
	local label=$1 ok=$2 show=$3
	shift 3
	local best="" best_cpu="" wall rss bytes rc note="" i
	for ((i = 1; i <= runs; i++)); do
		local p=$work/run
		set +e
		/usr/bin/time -f '%e %U %S %M' -o "$p.time" timeout "$timeout_s" "$@" 2>"$p.err" </dev/null | wc -c >"$p.bytes"
		rc=${PIPESTATUS[0]}
		set -e
		if [[ $rc == 124 ]]; then
			note="did not finish in ${timeout_s} s"
			break
		fi
		if [[ ",$ok," != *",$rc,"* ]]; then
			note="exit $rc: $(head -c 200 "$p.err" | tr '\n|' '  ')"
			break
		fi
		local t cpu
		t=$(tail -n 1 "$p.time")
		cpu=$(awk '{ printf "%.2f", $2 + $3 }' <<<"$t")
		if [[ -z $best_cpu ]] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then
			best=$t best_cpu=$cpu bytes=$(cat "$p.bytes")
		fi
	done
	if [[ -z $best ]]; then
		echo "| $label | | | | $note |"
		return
	fi
	wall=$(awk '{ printf "%.2f", $1 }' <<<"$best")
	rss=$(awk '{ printf "%.0f", $4 / 1024 }' <<<"$best")
	local out=""
	[[ $show == out ]] && out=$(human "$bytes")
	[[ -n $note ]] && out="$out (then $note)"
	echo "| $label | $wall s | $best_cpu s | $rss MB | $out |"
}

flow=(--from kube-system/coredns-0 --to kube-system/coredns-1 --port 53/udp)
for s in 1k 10k 100k; do
	has "$s" && job "one flow (\`explain\`), $s pods" 0 - "$netpol" explain -q -f "$work/$s.yaml" "${flow[@]}"
done
# The matrix's formats: label|flags.
formats=("text|" "\`-o json\`|-o json" "\`-o csv\`|-o csv" "\`-o md\`|-o md" "\`-o connlist\`|-o connlist"
	"\`-o json --classes\`|-o json --classes" "\`--by workload\`|--by workload")
for s in 1k 2k 10k; do
	has "$s" || continue
	for f in "${formats[@]}"; do
		read -r -a args <<<"${f#*|}"
		job "\`matrix\`, $s, ${f%%|*}" 0 out "$netpol" matrix -q -f "$work/$s.yaml" "${args[@]}"
	done
done
for s in 1k 10k 100k; do
	has "$s" && job "\`lint\`, $s" 0,1 - "$netpol" lint -q -f "$work/$s.yaml"
done
for s in 1k 10k 100k; do
	has "$s" && job "\`diff A A\`, $s" 0,1 out "$netpol" diff -q "$work/$s.yaml" "$work/$s.yaml"
done
if has 10k; then
	job "\`diff A B\`, 10k (B: hack/synth -pr)" 0,1 out "$netpol" diff -q "$work/10k.yaml" "$work/10k-pr.yaml"
fi

if has suggest; then
	job "\`suggest\`, 10k pods, 1M record lines (check included)" 0 out "$netpol" suggest -f "$work/sb/apps.yaml" --flows "$work/sb/record.jsonl" --enforce
fi

if $peers; then
	bin=$work/peers
	mkdir -p "$bin" "$work/d1k"
	cp "$work/1k.yaml" "$work/d1k/"
	# peer NAME MODULE VERSION PACKAGE: builds PACKAGE of MODULE@VERSION
	# into $bin/NAME from a throw-away module; prints why not on failure.
	peer() {
		local name=$1 module=$2 version=$3 pkg=$4 mod=$work/mod-$1
		mkdir -p "$mod"
		printf 'module peers\n\ngo 1.24\n' >"$mod/go.mod"
		if (cd "$mod" && go get "$pkg@$version" >"$mod/log" 2>&1 && go build -o "$bin/$name" "$pkg" >>"$mod/log" 2>&1); then
			echo "$name: $(cd "$mod" && go list -m -f '{{.Path}} {{.Version}}' "$module")" >&2
			return 0
		fi
		echo "| $name | | | | not installed from the Go module proxy: $(grep -v -m1 '^go: downloading' "$mod/log" | head -c 240 | tr '|' ' ') |"
		return 1
	}
	if has suggest; then
		mod=$work/mod-ig
		mkdir -p "$mod"
		printf 'module peers\n\ngo 1.24\n' >"$mod/go.mod"
		cat >"$mod/main.go" <<'GO'
// The advisor of Inspektor Gadget's "advise network-policy", as its
// report command runs it on a file of trace events.
package main

import (
	"fmt"
	"os"

	"github.com/inspektor-gadget/inspektor-gadget/pkg/gadgets/advise/networkpolicy/advisor"
)

func main() {
	a := advisor.NewAdvisor()
	if err := a.LoadFile(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	a.GeneratePolicies()
	fmt.Print(a.FormatPolicies())
}
GO
		if (cd "$mod" && go get "github.com/inspektor-gadget/inspektor-gadget@${IG_VERSION:-v0.30.0}" >"$mod/log" 2>&1 && go mod tidy >>"$mod/log" 2>&1 && go build -o "$bin/igadvisor" . >>"$mod/log" 2>&1); then
			job "Inspektor Gadget advisor, the same traffic ($(wc -l <"$work/sb/ig-events.jsonl") events)" 0 out "$bin/igadvisor" "$work/sb/ig-events.jsonl"
		else
			echo "| Inspektor Gadget advisor | | | | not built: $(grep -v -m1 '^go: downloading' "$mod/log" | head -c 240 | tr '|' ' ') |"
		fi
	fi
	if peer netpolicy github.com/np-guard/netpol-analyzer "${NPGUARD_VERSION:-v1.4.2}" github.com/np-guard/netpol-analyzer/cmd/netpolicy; then
		job "np-guard one flow (\`netpolicy eval\`), 1k pods" 0 - "$bin/netpolicy" eval -q --dirpath "$work/d1k" \
			-n kube-system -s coredns-0 --destination-namespace kube-system -d coredns-1 -p 53 --protocol udp
		job "np-guard all pairs (\`netpolicy list -o json\`), 1k" 0 out "$bin/netpolicy" list -q --dirpath "$work/d1k" -o json
	fi
	# Its go.mod (cmd/policy-assistant in kubernetes-sigs/network-policy-api)
	# names the module sigs.k8s.io/network-policy-api/policy-assistant, a
	# path that is not its directory: the proxy may have no version of it.
	if peer policy-assistant sigs.k8s.io/network-policy-api/policy-assistant "${POLICY_ASSISTANT_VERSION:-latest}" sigs.k8s.io/network-policy-api/policy-assistant/cmd/policy-assistant; then
		echo "| policy-assistant | | | | installed; its one flow and probe need a traffic and a probe JSON made from the dump, which this script does not write |"
	fi
fi

echo
echo "load average after: $(loadavg)"
