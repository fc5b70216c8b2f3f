#!/usr/bin/env bash
# cluster.sh brings up a real Kubernetes cluster on this one machine, with
# netpol deployed on it as users deploy it, and tears it down again:
#
#   hack/cluster/cluster.sh up [--name NAME] [--nodes N]   # prints how to reach it
#   hack/cluster/cluster.sh kubectl [--name NAME] ARGS...  # kubectl against it
#   hack/cluster/cluster.sh run [--name NAME] CMD...       # CMD where the API server is reachable
#   hack/cluster/cluster.sh down [--name NAME]             # leaves nothing behind
#
#   hack/cluster/cluster.sh e2e [--name NAME] [--reports DIR]          # upstream's NetworkPolicy specs
#   hack/cluster/cluster.sh conformance [--name NAME] [--reports DIR]  # network-policy-api's, ClusterNetworkPolicy profile
#   hack/cluster/cluster.sh realcluster [--name NAME] [--reports DIR]  # netpol's own (deploy/realcluster_test.go)
#   hack/cluster/cluster.sh test [--reports DIR]   # up, all three, down: what CI runs
#
# The parts are the ones users run: etcd, kube-apiserver, controller-manager
# and scheduler; on every node a kubelet, containerd with runc, the CNI
# bridge and host-local plugins, and kube-proxy in nftables mode; CoreDNS;
# and deploy/ applied unchanged with `kubectl apply -k`. Every one is built
# from a pinned version by hack/cluster/build.sh and hack/k8s-bin/build.sh.
#
# Shape. The control plane and every node are network namespaces of their
# own (npc-NAME-cp, npc-NAME-node-1, ...), joined by a bridge inside the
# control plane's; a node also has a mount namespace of its own, so that its
# /run, /var/lib and /var/log are its own as in a kind node. Nothing is
# attached to the host's network and every namespace's default route is
# unreachable, so no packet leaves the machine. Addresses:
#
#   nodes     198.19.0.0/24, fd00:19::/64 (control plane .1 and ::1, node-N .1N and ::1N)
#   pods      198.18.0.0/16, fd00:18::/48 (a /24 and a /64 per node, from the
#             controller-manager)
#   Services  198.19.128.0/20, fd00:19:1::/112 (kubernetes .1, kube-dns .10)
#   outside   198.19.0.250 and .251, fd00:19::250 and ::251 (npc-NAME-outside,
#             a host that is no node: agnhost netexec on TCP 8080; CoreDNS
#             answers for it as allowed.outside.test and denied.outside.test)
#
# The cluster is dual-stack, IPv4 first: pods and nodes have both families,
# Services are IPv4 unless they ask for IPv6.
#
# State lives in $NETPOL_CLUSTER_STATE/NAME (/var/lib/netpol-cluster/NAME):
# certificates, kubeconfigs, logs, the PIDs of the processes it started.
# `down` touches only what that directory records: the namespaces, cgroups,
# processes and mounts of its own cluster, and restores the host sysctls the
# kubelet rewrites to the values recorded at `up`.
#
# Needs root, nftables (nft), iproute2, openssl and util-linux; cgroup v1 or
# v2 mounted at /sys/fs/cgroup.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
state_root="${NETPOL_CLUSTER_STATE:-/var/lib/netpol-cluster}"

name=netpol
nodes=2
reports=""
pod_cidr=198.18.0.0/16
pod_cidr6=fd00:18::/48
node_net=198.19.0
node_net6=fd00:19:
svc_cidr=198.19.128.0/20
svc_cidr6=fd00:19:1::/112
svc_kubernetes=198.19.128.1
svc_dns=198.19.128.10
cp_ip="$node_net.1"
cp_ip6="$node_net6:1"
# A host outside the cluster, on the nodes' network, with two addresses:
# CoreDNS names them allowed.outside.test and denied.outside.test.
outside_ip="$node_net.250"
outside_ip2="$node_net.251"
outside_ip6="$node_net6:250"
outside_ip6_2="$node_net6:251"
# The host sysctls the kubelet rewrites (protectKernelDefaults: false).
host_sysctls=(kernel.panic kernel.panic_on_oops vm.overcommit_memory)

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }

node_ip() { echo "$node_net.$((10 + $1))"; }
node_ip6() { echo "$node_net6:$((10 + $1))"; }
ns_cp() { echo "npc-$name-cp"; }
ns_node() { echo "npc-$name-node-$1"; }
cgroup_root() { echo "npc-$name-node-$1"; }

# cp_enter and node_enter set the command prefix that enters the control
# plane's network namespace, or a node's network and mount namespaces: an
# array, for start, which runs programs rather than functions.
cp_enter() { cp_enter=(nsenter --net="/run/netns/$(ns_cp)" --); }
node_enter() { node_enter=(nsenter --net="/run/netns/$(ns_node "$1")" --mount="$state/mnt/node-$1" --); }

# in_cp runs a command in the control plane's network namespace; in_node I
# in node I's.
in_cp() { cp_enter; "${cp_enter[@]}" "$@"; }
in_node() {
  node_enter "$1"
  shift
  "${node_enter[@]}" "$@"
}

# start runs a daemon in the background with its log and PID in the state
# directory, in a session of its own so that a signal to this script's
# group does not reach it.
start() {
  local what=$1
  shift
  setsid "$@" >"$state/logs/$what.log" 2>&1 </dev/null &
  echo $! >"$state/pids/$what"
  # Not this shell's job: down stops it, and bash need not report how.
  disown
}

# wait_for polls a command until it succeeds or the timeout passes.
wait_for() {
  local what=$1 timeout=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      die "$what not ready after ${timeout}s (logs: $state/logs)"
    fi
    sleep 0.5
  done
}

kubectl_() { in_cp "$k8s_bin/kubectl" --kubeconfig "$state/admin.kubeconfig" "$@"; }

# ---------------------------------------------------------------------------
# Certificates and kubeconfigs

cert() { # cert FILE CN [O] [SANS]
  local f=$1 cn=$2 o=${3:-} sans=${4:-}
  local subj="/CN=$cn"
  [ -n "$o" ] && subj="$subj/O=$o"
  local ext="$state/pki/$f.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [ -n "$sans" ] && echo "subjectAltName=$sans"
  } >"$ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$state/pki/$f.key" -out "$state/pki/$f.csr" -subj "$subj" 2>/dev/null
  openssl x509 -req -in "$state/pki/$f.csr" -CA "$state/pki/ca.crt" -CAkey "$state/pki/ca.key" \
    -CAcreateserial -days 30 -extfile "$ext" -out "$state/pki/$f.crt" 2>/dev/null
  rm -f "$state/pki/$f.csr" "$ext"
}

kubeconfig() { # kubeconfig FILE CERT
  cat >"$state/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: https://$cp_ip:6443
    certificate-authority: $state/pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $state/pki/$2.crt
    client-key: $state/pki/$2.key
contexts:
- name: $name
  context: {cluster: $name, user: $2}
current-context: $name
EOF
}

make_pki() {
  mkdir -p "$state/pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
    -keyout "$state/pki/ca.key" -out "$state/pki/ca.crt" -subj "/CN=netpol-cluster-$name-ca" 2>/dev/null
  cert apiserver kube-apiserver "" \
    "IP:$cp_ip,IP:$svc_kubernetes,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  cert admin netpol-cluster-admin system:masters
  cert controller-manager system:kube-controller-manager
  cert scheduler system:kube-scheduler
  cert kube-proxy system:kube-proxy
  for i in $(seq 1 "$nodes"); do
    cert "node-$i" "system:node:node-$i" system:nodes
  done
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$state/pki/sa.key" 2>/dev/null
  openssl pkey -in "$state/pki/sa.key" -pubout -out "$state/pki/sa.pub" 2>/dev/null
  for u in admin controller-manager scheduler kube-proxy $(seq -f 'node-%g' 1 "$nodes"); do
    kubeconfig "$u" "$u"
  done
}

# ---------------------------------------------------------------------------
# Networks

make_networks() {
  local cp i
  cp="$(ns_cp)"
  ip netns add "$cp"
  echo "$cp" >>"$state/netns"
  ip -n "$cp" link set lo up
  ip -n "$cp" link add br0 type bridge
  ip -n "$cp" addr add "$cp_ip/24" dev br0
  # nodad: a tentative address would fail the first binds for a second.
  ip -n "$cp" addr add "$cp_ip6/64" dev br0 nodad
  ip -n "$cp" link set br0 up
  ip -n "$cp" route add unreachable default
  ip -n "$cp" -6 route add unreachable default
  in_cp sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
  local o
  o="npc-$name-outside"
  ip netns add "$o"
  echo "$o" >>"$state/netns"
  ip -n "$o" link set lo up
  ip -n "$cp" link add outside type veth peer name eth0 netns "$o"
  ip -n "$cp" link set outside master br0 up
  ip -n "$o" addr add "$outside_ip/24" dev eth0
  ip -n "$o" addr add "$outside_ip2/24" dev eth0
  ip -n "$o" addr add "$outside_ip6/64" dev eth0 nodad
  ip -n "$o" addr add "$outside_ip6_2/64" dev eth0 nodad
  ip -n "$o" link set eth0 up
  ip -n "$o" route add unreachable default
  ip -n "$o" -6 route add unreachable default
  for i in $(seq 1 "$nodes"); do
    local n
    n="$(ns_node "$i")"
    ip netns add "$n"
    echo "$n" >>"$state/netns"
    ip -n "$n" link set lo up
    # Both ends inside namespaces: nothing of the cluster on the host.
    ip -n "$cp" link add "node-$i" type veth peer name eth0 netns "$n"
    ip -n "$cp" link set "node-$i" master br0 up
    ip -n "$n" addr add "$(node_ip "$i")/24" dev eth0
    ip -n "$n" addr add "$(node_ip6 "$i")/64" dev eth0 nodad
    ip -n "$n" link set eth0 up
    ip -n "$n" route add unreachable default
    ip -n "$n" -6 route add unreachable default
    # A node's own processes reach Services through kube-proxy's DNAT,
    # which runs after the route lookup that the unreachable default fails.
    ip -n "$n" route add "$svc_cidr" via "$cp_ip"
    ip -n "$n" route add "$svc_cidr6" via "$cp_ip6"
    nsenter --net="/run/netns/$n" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
    # kube-proxy needs bridged pod traffic to pass its DNAT and un-DNAT.
    nsenter --net="/run/netns/$n" sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
  done
}

# route_pods gives every namespace a route to every node's pod CIDR, as
# kindnet does, once the controller-manager has assigned them; and writes
# each node's CNI configuration for its own.
route_pods() {
  local i j n cidrs cidr4 cidr6 deadline
  for i in $(seq 1 "$nodes"); do
    deadline=$((SECONDS + 60))
    until cidrs="$(kubectl_ get node "node-$i" -o jsonpath='{.spec.podCIDRs[*]}' 2>/dev/null)" && [ -n "$cidrs" ]; do
      ((SECONDS < deadline)) || die "node-$i has no pod CIDRs after 60s (logs: $state/logs)"
      sleep 0.5
    done
    read -r cidr4 cidr6 <<<"$cidrs"
    [[ $cidr4 == *.* && $cidr6 == *:* ]] || die "node-$i pod CIDRs $cidrs: want one IPv4 and one IPv6, in that order"
    for n in "$(ns_cp)" "npc-$name-outside" $(for j in $(seq 1 "$nodes"); do [ "$i" = "$j" ] || ns_node "$j"; done); do
      ip -n "$n" route replace "$cidr4" via "$(node_ip "$i")"
      ip -n "$n" -6 route replace "$cidr6" via "$(node_ip6 "$i")"
    done
    mkdir -p "$state/node-$i/etc-cni"
    cat >"$state/node-$i/etc-cni/10-bridge.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "netpol-cluster",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$cidr4"}], [{"subnet": "$cidr6"}]],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  done
}

# ---------------------------------------------------------------------------
# Control plane

start_control_plane() {
  mkdir -p "$state/etcd"
  cp_enter
  start etcd "${cp_enter[@]}" "$k8s_bin/etcd" --data-dir "$state/etcd" --unsafe-no-fsync \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster default=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381
  local pki="$state/pki"
  start kube-apiserver "${cp_enter[@]}" "$k8s_bin/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 \
    --advertise-address="$cp_ip" --bind-address=0.0.0.0 --secure-port=6443 \
    --cert-dir="$state/pki/generated" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP \
    --service-cluster-ip-range="$svc_cidr,$svc_cidr6" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --allow-privileged=true
  wait_for "kube-apiserver" 120 kubectl_ get --raw /readyz
  start kube-controller-manager "${cp_enter[@]}" "$cluster_bin/bin/kube-controller-manager" \
    --kubeconfig="$state/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$state/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$state/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false \
    --use-service-account-credentials --service-account-private-key-file="$pki/sa.key" \
    --root-ca-file="$pki/ca.crt" \
    --allocate-node-cidrs --cluster-cidr="$pod_cidr,$pod_cidr6" \
    --node-cidr-mask-size-ipv4=24 --node-cidr-mask-size-ipv6=64 \
    --service-cluster-ip-range="$svc_cidr,$svc_cidr6"
  start kube-scheduler "${cp_enter[@]}" "$cluster_bin/bin/kube-scheduler" \
    --kubeconfig="$state/scheduler.kubeconfig" \
    --authentication-kubeconfig="$state/scheduler.kubeconfig" \
    --authorization-kubeconfig="$state/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false
}

# ---------------------------------------------------------------------------
# Nodes

# make_node_mounts makes node i's mount namespace, persistent through a bind
# mount of it under $state/mnt: its own /run and /var/log, and the
# directories of /var/lib that a node's daemons write (not all of /var/lib,
# which holds the state directory).
make_node_mounts() {
  local i=$1 d="$state/node-$i" m
  mkdir -p "$d/etc-cni"
  touch "$state/mnt/node-$i"
  local mounts=(/run /var/log /var/lib/kubelet /var/lib/containerd /var/lib/cni)
  local script=""
  for m in "${mounts[@]}"; do
    mkdir -p "$d/fs$m" "$m"
    script+="mount --bind '$d/fs$m' '$m'; "
  done
  unshare --mount="$state/mnt/node-$i" --propagation private sh -ec "$script"
}

# make_cgroups creates node i's cgroup root in every mounted hierarchy, as
# the kubelet's cgroupfs driver expects it to exist.
make_cgroups() {
  local i=$1 h
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -e "$h/cgroup.procs" ] || continue
    mkdir -p "$h$(cgroup_root "$i")"
  done
}

start_node() {
  local i=$1 d="$state/node-$i" pki="$state/pki"
  mkdir -p "$d/etc"
  cat >"$d/etc/containerd.toml" <<EOF
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.runtime']
  # No CAP_SYS_RESOURCE on some VMs: runc cannot lower oom_score_adj.
  restrict_oom_score_adj = true
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ["$cluster_bin/cni"]
  conf_dir = "$d/etc-cni"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = "$cluster_bin/bin/runc"
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "registry.k8s.io/pause:3.10.2"
EOF
  # The shim finds runc and itself on PATH.
  node_enter "$i"
  start "containerd-$i" "${node_enter[@]}" env PATH="$cluster_bin/bin:$PATH" \
    "$cluster_bin/bin/containerd" --config "$d/etc/containerd.toml"
  wait_for "containerd on node-$i" 60 in_node "$i" "$cluster_bin/bin/ctr" --address /run/containerd/containerd.sock version
  local img
  for img in "$cluster_bin"/images/*.tar "$state/netpol-image.tar"; do
    # ctr warns of cgroup v1 on every call: keep its words in a log.
    in_node "$i" "$cluster_bin/bin/ctr" --address /run/containerd/containerd.sock -n k8s.io \
      images import --no-unpack "$img" >/dev/null 2>>"$state/logs/ctr-$i.log" ||
      die "importing $img on node-$i failed: $(tail -3 "$state/logs/ctr-$i.log")"
  done

  # No nameserver: pods that would use the node's resolver get none, so no
  # query can leave the machine.
  echo "# netpol cluster $name: no upstream resolver" >"$d/etc/resolv.conf"
  cat >"$d/etc/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has cgroup v1 only; this Kubernetes still runs on it when told.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$(cgroup_root "$i")
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: $(node_ip "$i")
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$svc_dns]
resolvConf: $d/etc/resolv.conf
failSwapOn: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
EOF
  start "kubelet-$i" "${node_enter[@]}" "$cluster_bin/bin/kubelet" \
    --config="$d/etc/kubelet.yaml" --kubeconfig="$state/node-$i.kubeconfig" \
    --hostname-override="node-$i" --node-ip="$(node_ip "$i"),$(node_ip6 "$i")" --cert-dir="$d/etc/kubelet-pki"

  cat >"$d/etc/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection: {kubeconfig: $state/kube-proxy.kubeconfig}
hostnameOverride: node-$i
clusterCIDR: $pod_cidr,$pod_cidr6
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# nf_conntrack_max and the timeouts are not writable outside the host's
# first namespace: leave them as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s, udpTimeout: 0s, udpStreamTimeout: 0s}
EOF
  start "kube-proxy-$i" "${node_enter[@]}" "$cluster_bin/bin/kube-proxy" --config="$d/etc/kube-proxy.yaml"
}

# ---------------------------------------------------------------------------
# Add-ons: CoreDNS and netpol

apply_coredns() {
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: system:coredns}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: system:coredns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:coredns}
subjects:
- {kind: ServiceAccount, name: coredns, namespace: kube-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  # kubeadm's Corefile without forward: no query leaves the machine.
  Corefile: |
    .:53 {
        errors
        health {
            lameduck 5s
        }
        ready
        # The outside host's names, for domainNames rules.
        hosts {
            $outside_ip allowed.outside.test
            $outside_ip2 denied.outside.test
            $outside_ip6 allowed.outside.test
            $outside_ip6_2 denied.outside.test
            fallthrough
        }
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        prometheus :9153
        cache 30
        loop
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  replicas: 2
  selector:
    matchLabels: {k8s-app: kube-dns}
  template:
    metadata:
      labels: {k8s-app: kube-dns}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      tolerations:
      - {key: node-role.kubernetes.io/control-plane, effect: NoSchedule}
      containers:
      - name: coredns
        image: registry.k8s.io/coredns/coredns:v1.14.2
        imagePullPolicy: IfNotPresent
        args: [-conf, /etc/coredns/Corefile]
        volumeMounts:
        - {name: config-volume, mountPath: /etc/coredns, readOnly: true}
        ports:
        - {containerPort: 53, name: dns, protocol: UDP}
        - {containerPort: 53, name: dns-tcp, protocol: TCP}
        - {containerPort: 9153, name: metrics, protocol: TCP}
        securityContext:
          capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}
          readOnlyRootFilesystem: true
        livenessProbe:
          httpGet: {path: /health, port: 8080}
          initialDelaySeconds: 10
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
      volumes:
      - name: config-volume
        configMap:
          name: coredns
          items: [{key: Corefile, path: Corefile}]
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  selector: {k8s-app: kube-dns}
  clusterIP: $svc_dns
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
  - {name: metrics, port: 9153, protocol: TCP}
EOF
}

# build_netpol_image builds netpol as the README does and packs it as the
# Dockerfile does, under the tag deploy/ pins, so that deploy/ runs it
# unchanged.
build_netpol_image() {
  local tag
  tag="$(deploy_image)"
  log "netpol image $tag"
  (cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$state/netpol" ./cmd/netpol)
  # A second tag, for deploy/realcluster_test.go's rollout to a new image.
  "$cluster_bin/bin/image" -tag "$tag,${tag%:*}:rollout" -o "$state/netpol-image.tar" -entrypoint netpol \
    "$cluster_bin/rootfs" "$state/netpol=/usr/local/bin/netpol"
}

# deploy_image is the image deploy/ runs, with kustomize's tag applied.
deploy_image() {
  local tag
  tag="$(sed -n 's/^  newTag: *//p' "$repo/deploy/kustomization.yaml")"
  echo "ghcr.io/netpol/netpol:$tag"
}

# ---------------------------------------------------------------------------
# Commands

cmd_up() {
  [ "$(id -u)" = 0 ] || die "needs root"
  if [ -e "$state" ]; then
    die "cluster $name exists ($state): cluster.sh down --name $name first"
  fi
  local t0=$SECONDS
  k8s_bin="$(bash "$repo/hack/k8s-bin/build.sh")"
  cluster_bin="$(bash "$here/build.sh")"
  local t_built=$SECONDS
  mkdir -p "$state/logs" "$state/pids" "$state/mnt"
  echo "$k8s_bin" >"$state/k8s-bin"
  echo "$cluster_bin" >"$state/cluster-bin"
  # Everything down needs to undo is recorded before it is done.
  : >"$state/netns"
  local s
  for s in "${host_sysctls[@]}"; do
    echo "$s=$(sysctl -n "$s")" >>"$state/sysctls"
  done
  mount --bind "$state/mnt" "$state/mnt"
  mount --make-private "$state/mnt"

  build_netpol_image
  make_pki
  make_networks
  start_control_plane
  start outside nsenter --net="/run/netns/npc-$name-outside" -- "$cluster_bin/bin/agnhost" netexec --http-port=8080
  log "control plane up after $((SECONDS - t_built))s"
  local i
  for i in $(seq 1 "$nodes"); do
    make_node_mounts "$i"
    make_cgroups "$i"
    start_node "$i"
  done
  route_pods
  apply_coredns
  kubectl_ apply -k "$repo/deploy" >/dev/null
  kubectl_ wait --for=condition=Ready node --all --timeout=120s >/dev/null
  log "nodes ready after $((SECONDS - t_built))s"
  kubectl_ -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null
  kubectl_ -n netpol-system rollout status daemonset/netpol-agent --timeout=180s >/dev/null
  log "ready: CoreDNS and netpol on $nodes nodes, $((SECONDS - t_built))s after the build ($((t_built - t0))s)"
  cat <<EOF
kubeconfig: $state/admin.kubeconfig (the API server is at https://$cp_ip:6443 in network namespace $(ns_cp))
  hack/cluster/cluster.sh kubectl --name $name get pods -A
  hack/cluster/cluster.sh down --name $name
EOF
}

# kill_pids stops the processes whose PID files match, politely first.
kill_pids() {
  local f pids=()
  for f in "$@"; do
    [ -e "$f" ] && pids+=("$(cat "$f")")
  done
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  local deadline=$((SECONDS + 10))
  while kill -0 "${pids[@]}" 2>/dev/null && ((SECONDS < deadline)); do
    sleep 0.2
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

# kill_cgroup kills every process in a cgroup tree, in every hierarchy,
# then removes the tree: containers outlive their shims.
kill_cgroup() {
  local root=$1 h pass
  for pass in 1 2 3; do
    for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
      [ -d "$h$root" ] || continue
      find "$h$root" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    done
    sleep 0.2
  done
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -d "$h$root" ] || continue
    find "$h$root" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

cmd_down() {
  [ "$(id -u)" = 0 ] || die "needs root"
  [ -d "$state" ] || { log "no cluster $name ($state)"; return 0; }
  local i n
  # Kubelets first, so that nothing restarts what is being stopped.
  kill_pids "$state"/pids/kubelet-* "$state"/pids/kube-proxy-*
  kill_pids "$state"/pids/containerd-*
  kill_pids "$state"/pids/outside "$state"/pids/kube-scheduler "$state"/pids/kube-controller-manager "$state"/pids/kube-apiserver "$state"/pids/etcd
  for i in $(seq 1 64); do
    [ -d "$state/node-$i" ] || break
    kill_cgroup "$(cgroup_root "$i")"
  done
  # Whatever is left in the cluster's namespaces: shims, host-network pods;
  # then wait until they are gone, not just signalled.
  if [ -e "$state/netns" ]; then
    local deadline=$((SECONDS + 15)) left
    while :; do
      left=0
      while read -r n; do
        [ -e "/run/netns/$n" ] || continue
        if [ -n "$(ip netns pids "$n")" ]; then
          left=1
          ip netns pids "$n" | xargs -r kill -KILL 2>/dev/null || true
        fi
      done <"$state/netns"
      ((left)) || break
      ((SECONDS < deadline)) || die "processes remain in the cluster's namespaces after 15s"
      sleep 0.2
    done
  fi
  # The node mount namespaces go with their last process and their bind
  # mount; then the mounts under the state directory.
  if [ -d "$state/mnt" ]; then
    for n in "$state"/mnt/node-*; do
      [ -e "$n" ] && umount "$n" 2>/dev/null || true
    done
    umount "$state/mnt" 2>/dev/null || true
  fi
  # Veths first: a deleted namespace pinned by a lingering socket would keep
  # them, and the next up would find their names taken.
  if [ -e "$state/netns" ]; then
    while read -r n; do
      [ -e "/run/netns/$n" ] || continue
      ip -n "$n" -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
        while read -r l; do ip -n "$n" link del "$l" 2>/dev/null || true; done
      ip netns del "$n" || true
    done <"$state/netns"
  fi
  if [ -e "$state/sysctls" ]; then
    while read -r kv; do
      sysctl -qw "$kv" || true
    done <"$state/sysctls"
  fi
  # Nothing of the cluster may remain: say what did, and keep the state
  # directory that names it.
  grep -q " $state" /proc/mounts && die "mounts under $state remain: $(grep " $state" /proc/mounts | cut -d' ' -f2 | tr '\n' ' ')"
  if [ -e "$state/netns" ]; then
    while read -r n; do
      [ ! -e "/run/netns/$n" ] || die "network namespace $n remains"
    done <"$state/netns"
  fi
  local h
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    for n in "$h"npc-"$name"-node-*; do
      [ ! -d "$n" ] || die "cgroup $n remains"
    done
  done
  rm -rf "$state"
  log "cluster $name removed"
}

# ---------------------------------------------------------------------------
# Suites

load_bins() {
  [ -d "$state" ] || die "no cluster $name ($state): cluster.sh up --name $name"
  k8s_bin="$(cat "$state/k8s-bin")"
  cluster_bin="$(cat "$state/cluster-bin")"
  [ -n "$reports" ] || reports="$state/reports"
  mkdir -p "$reports"
  reports="$(cd "$reports" && pwd)"
}

# cmd_e2e runs upstream Kubernetes' [Feature:NetworkPolicy] specs, as
# upstream's e2e.test runs them, but for the three [Feature:SCTPConnectivity]
# ones, which open SCTP sockets: this kernel has none. (The two specs that
# only write SCTP into a policy and probe with TCP do run.) JUnit XML in
# $reports/e2e-junit.xml.
cmd_e2e() {
  load_bins
  local work="$state/e2e" rc=0
  rm -rf "$work" && mkdir -p "$work"
  log "e2e: upstream [Feature:NetworkPolicy] specs (about 8 minutes)"
  KUBECONFIG="$state/admin.kubeconfig" in_cp "$cluster_bin/bin/e2e.test" \
    --kubeconfig="$state/admin.kubeconfig" --provider=local \
    --ginkgo.focus='\[Feature:NetworkPolicy\]' --ginkgo.skip='\[Feature:SCTPConnectivity\]' \
    --ginkgo.no-color --ginkgo.timeout=1h --report-dir="$work" >"$reports/e2e.log" 2>&1 || rc=$?
  cp "$work/junit_01.xml" "$reports/e2e-junit.xml" 2>/dev/null || true
  grep -E '^(Ran|PASS|FAIL|SUCCESS|FAIL!)' "$reports/e2e.log" | tail -3 >&2 || true
  return $rc
}

# cmd_conformance runs network-policy-api's conformance suite at the version
# netpol pins, profile ClusterNetworkPolicy with the standard and every
# experimental feature, and keeps upstream's ConformanceReport. The suite
# carries hack/cluster/conformance/no-sctp-kernel.patch: hack/cluster/verdict
# accepts a test that failed only on its SCTP probes and nothing else.
cmd_conformance() {
  load_bins
  local rc=0 version
  version="$(cd "$repo" && git describe --always --dirty 2>/dev/null || echo unknown)"
  log "conformance: network-policy-api, profile ClusterNetworkPolicy (about 10 minutes)"
  KUBECONFIG="$state/admin.kubeconfig" in_cp go tool test2json -t \
    "$cluster_bin/bin/conformance.test" -test.v=test2json -test.run=TestConformanceProfiles -test.timeout=90m \
    --conformance-profiles=ClusterNetworkPolicy \
    --supported-features=ClusterNetworkPolicy,ClusterNetworkPolicyNamedPorts,ClusterNetworkPolicyEgressNodePeers \
    --organization=netpol --project=netpol --url=https://github.com/netpol/netpol \
    --version="$version" --contact=netpol-maintainers \
    --additional-info="hack/cluster/cluster.sh conformance; suite patched with hack/cluster/conformance/no-sctp-kernel.patch" \
    --report-output="$reports/conformance-report.yaml" >"$reports/conformance.json" 2>"$reports/conformance.stderr" || true
  (cd "$repo" && go run ./hack/cluster/verdict -report "$reports/conformance-report.yaml") \
    <"$reports/conformance.json" >"$reports/conformance-verdict.md" || rc=$?
  log "conformance: $(grep -c '| pass |' "$reports/conformance-verdict.md") passed," \
    "$(grep -c 'SCTP probes only' "$reports/conformance-verdict.md") failed on SCTP probes only," \
    "$(grep -c '| failed |\|| did not finish |' "$reports/conformance-verdict.md") failed (table: $reports/conformance-verdict.md)"
  grep '| failed |\|| did not finish |' "$reports/conformance-verdict.md" >&2 || true
  return $rc
}

# cmd_realcluster runs netpol's own real-cluster tests.
cmd_realcluster() {
  load_bins
  local rc=0
  log "realcluster: netpol's own tests on the cluster"
  (cd "$repo" && go test -c -tags realcluster -o "$state/realcluster.test" ./deploy/)
  (cd "$repo/deploy" && KUBECONFIG="$state/admin.kubeconfig" in_cp "$state/realcluster.test" \
    -test.run=TestRealCluster -test.v -test.count=1 -test.timeout=20m) >"$reports/realcluster.log" 2>&1 || rc=$?
  grep -E '^(=== RUN|--- |    realcluster_test|PASS|FAIL|ok)' "$reports/realcluster.log" | grep -v '=== RUN' >&2 || true
  return $rc
}

# cmd_test is CI's: a cluster of its own, every suite, and down whatever
# happened. It fails if any suite failed.
cmd_test() {
  local failed=()
  trap 'cmd_down' EXIT
  # A signal ends the run through exit, so that the cluster goes down too.
  trap 'exit 130' INT TERM
  cmd_up
  cmd_e2e || failed+=(e2e)
  cmd_conformance || failed+=(conformance)
  # Last: its memory test reads the agents' peaks after the suites' load.
  cmd_realcluster || failed+=(realcluster)
  log "reports in $reports"
  if ((${#failed[@]})); then
    # Keep the logs of a failed run beside the reports, the agents' too
    # (what they learned and programmed is where a failure starts).
    cp -r "$state/logs" "$reports/cluster-logs" 2>/dev/null || true
    mkdir -p "$reports/cluster-logs"
    kubectl_ logs -n netpol-system -l app.kubernetes.io/name=netpol --all-containers --prefix --tail=-1 \
      >"$reports/cluster-logs/netpol-agents.log" 2>&1 || true
    die "failed: ${failed[*]}"
  fi
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit "${1:-0}"
}

main() {
  local cmd=${1:-} name_given=0
  [ -n "$cmd" ] || usage 2
  shift
  while [ $# -gt 0 ]; do
    case $1 in
    --name) name=$2; name_given=1; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --reports) reports=$2; shift 2 ;;
    -h | --help) usage ;;
    *) break ;;
    esac
  done
  [[ $name =~ ^[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?$ ]] || die "--name must be 1-16 of a-z, 0-9 and -"
  [[ $nodes =~ ^[1-9]$ ]] || die "--nodes must be 1 to 9"
  # A test run's cluster is named for the run, so that two runs on one
  # machine never share one.
  if [ "$cmd" = test ] && [ "$name_given" = 0 ]; then
    name="t$$"
  fi
  state="$state_root/$name"
  case $cmd in
  up) cmd_up ;;
  down) cmd_down ;;
  e2e) cmd_e2e ;;
  conformance) cmd_conformance ;;
  realcluster) cmd_realcluster ;;
  test) cmd_test ;;
  kubectl)
    k8s_bin="$(cat "$state/k8s-bin" 2>/dev/null)" || die "no cluster $name"
    kubectl_ "$@" ;;
  run)
    [ -d "$state" ] || die "no cluster $name"
    KUBECONFIG="$state/admin.kubeconfig" in_cp "$@" ;;
  -h | --help | help) usage ;;
  *) usage 2 ;;
  esac
}

# One line, read whole before it runs: an edit of this file while it runs
# cannot feed the shell what follows.
main "$@"; exit
