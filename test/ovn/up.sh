#!/bin/bash
# up.sh NAME -- (adapted from ../shared/testbeds/ovn) build a throwaway OVN + Open vSwitch (userspace datapath)
# test bed shaped like one OVN-Kubernetes node in local gateway mode
# (OpenShift 4.8/4.9), entirely inside two network namespaces:
#
#   $NAME-node : the node's host network.  br-ex (OVS netdev bridge,
#                172.18.0.2/16, default via 172.18.0.1 which does NOT exist),
#                br-int (OVS netdev bridge managed by ovn-controller),
#                ovn-k8s-mp0 (OVS internal port = tap, 10.244.1.2/24, bound to
#                LSP k8s-node1), the host end of the pod veth (pod1-h, on
#                br-int, bound to LSP default_pod1), and ALL daemons:
#                ovsdb-server (conf.db), ovs-vswitchd, NB + SB ovsdb-servers,
#                ovn-northd, ovn-controller.
#   $NAME-pod  : one pod: eth0 (veth) 10.244.1.3/24 gw 10.244.1.1,
#                python3 -m http.server 8080.
# OVN NB: switch node1 (10.244.1.0/24), router ovn_cluster_router with
# rtos-node1 10.244.1.1/24, load balancer 10.96.0.10:80 -> 10.244.1.3:8080
# (tcp) on switch node1, like OVN-K's ClusterIP service LB.
#
# Finally the node gets the STALE shared-gateway-mode service route
#   10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400
# so service traffic from the host network is broken until it is replaced by
#   10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0
# (verify.sh checks both).
#
# Why every daemon runs inside $NAME-node: with datapath_type=netdev an OVS
# "internal" port is a tap device that ovs-vswitchd creates in ITS OWN
# namespace, and a "system" port (the pod veth end) is read with an AF_PACKET
# socket in its own namespace.  Running vswitchd in the node namespace gives
# exactly the real node's layout (mp0 and pod veths in the host netns, next to
# vswitchd) and no interface ever exists in the root namespace.  All OVSDB /
# OpenFlow / unixctl connections are unix sockets under $RUN (filesystem
# paths, reachable from any namespace).  The alternative (vswitchd in another
# namespace, tap moved in; alt/alt-placement.sh) passes packets at first, but
# OVS then manages the port by name in ITS namespace: link_state down, mtu 0,
# mtu_request ignored, ethtool errors, and after a vswitchd restart it
# creates a fresh tap of that name in its own namespace and the moved one
# goes dead (ping 100% loss).
#
# Options (environment), for the layouts the project's tests need (test/helpers/ovn.ts):
#   GATEWAY_ROUTER=1  also a shared-gateway path as OVN-Kubernetes builds it: br-ex bridged
#                     (ovn-bridge-mappings, a localnet port) to switch ext_node1 and gateway
#                     router GR_node1, whose port holds br-ex's next hops 172.18.0.1/16 (4.8/4.9
#                     shared, 4.10/4.11) and 169.254.169.4/29 (4.12+ masquerade; br-ex gets
#                     169.254.169.2/29), joined to ovn_cluster_router over switch join; the
#                     ClusterIP load balancer on GR_node1 too. A br-ex service route then reaches
#                     the service, through OVN, as on a real node.
#   SWITCH_LB=0       no load balancer on switch node1: the mp0 route then does NOT reach the
#                     service (a 4.10+ node's service path is br-ex's only, and a probe must tell
#                     a route moved to mp0).
#
# Idempotent: it first runs down.sh NAME.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh" "$@"
T0=$(date +%s.%N)
step() { awk -v t0="$T0" -v now="$(date +%s.%N)" -v m="$*" 'BEGIN{printf "[up %6.2fs] %s\n", now-t0, m}'; }

for b in ovsdb-tool ovsdb-server ovs-vswitchd ovs-vsctl ovn-northd ovn-controller ovn-nbctl ovn-sbctl ethtool curl; do
  command -v $b >/dev/null || { echo "missing $b: apt-get install -y openvswitch-switch ovn-central ovn-host ethtool curl" >&2; exit 1; }
done
[ -c /dev/net/tun ] || { echo "/dev/net/tun missing (needed for netdev internal ports)" >&2; exit 1; }

VSWITCHD=${OVS_VSWITCHD:-/usr/sbin/ovs-vswitchd}
[ -x "$VSWITCHD" ] || { echo "no $VSWITCHD" >&2; exit 1; }
"$HERE/down.sh" "$NAME" >/dev/null
mkdir -p "$RUN" "$DB" "$LOG" "$BASE/etc"

# ---------------------------------------------------------------- namespaces
step "namespaces $NS_NODE $NS_POD"
ip netns add "$NS_NODE"
ip netns add "$NS_POD"
innode ip link set lo up
inpod  ip link set lo up

# ------------------------------------------------------- Open vSwitch daemons
step "ovsdb-server (Open_vSwitch)"
ovsdb-tool create "$DB/conf.db" /usr/share/openvswitch/vswitch.ovsschema
innode ovsdb-server "$DB/conf.db" \
  --remote=punix:"$RUN/db.sock" \
  --remote=db:Open_vSwitch,Open_vSwitch,manager_options \
  --pidfile="$RUN/ovsdb-server.pid" --unixctl="$RUN/ovsdb-server.ctl" \
  --log-file="$LOG/ovsdb-server.log" --detach --no-chdir -vconsole:warn
ovs-vsctl --no-wait init
# OVN chassis settings read by ovn-controller (what ovnkube-node / the
# OpenShift ovs-configuration sets on a real node).  encap-ip 127.0.0.1: there
# is no other chassis, so no geneve tunnel port is ever created.
ovs-vsctl --no-wait set Open_vSwitch . \
  external_ids:system-id="$NAME-node1" \
  external_ids:hostname=node1 \
  external_ids:ovn-remote="unix:$RUN/ovnsb_db.sock" \
  external_ids:ovn-encap-type=geneve \
  external_ids:ovn-encap-ip=127.0.0.1 \
  external_ids:ovn-bridge=br-int \
  external_ids:ovn-bridge-datapath-type=netdev

step "ovs-vswitchd $VSWITCHD (userspace datapath; no kernel module needed)"
# --monitor: Debian 12's ovs-vswitchd 3.1.0 can abort under bursty TCP
# connection churn through NAT conntrack ("conntrack.c:1063: assertion
# conn->conn_type == CT_CONN_TYPE_DEFAULT failed in conn_update_state()",
# fixed upstream in 3.1.3 by "conntrack: Remove nat_conn introducing key
# directionality").  The monitor restarts it; probe.sh flags any run during
# which that happened.  OVS_VSWITCHD=/path/to/ovs-vswitchd selects another
# binary (for instance one built from a newer upstream release without the conntrack abort).
innode "$VSWITCHD" "unix:$RUN/db.sock" \
  --pidfile="$RUN/ovs-vswitchd.pid" --unixctl="$RUN/ovs-vswitchd.ctl" \
  --log-file="$LOG/ovs-vswitchd.log" --detach --monitor --no-chdir -vconsole:warn

# br-int exactly as OVN-K wants it (secure fail mode, no in-band), netdev.
ovs-vsctl --timeout=20 -- --may-exist add-br br-int \
  -- set Bridge br-int datapath_type=netdev fail_mode=secure \
     other_config:disable-in-band=true
# br-ex: OVS netdev bridge too (on OpenShift br-ex is an OVS bridge).  It has
# no uplink here: 172.18.0.1 answers nobody, so the shared-mode route is dead.
ovs-vsctl --timeout=20 -- --may-exist add-br br-ex \
  -- set Bridge br-ex datapath_type=netdev
innode ip addr add "$BREX_IP/16" dev br-ex
innode ip link set br-ex up
innode ip route add default via "$BREX_GW" dev br-ex

# --------------------------------------------------------------- OVN central
step "OVN NB/SB ovsdb-servers + ovn-northd"
ovsdb-tool create "$DB/ovnnb_db.db" /usr/share/ovn/ovn-nb.ovsschema
ovsdb-tool create "$DB/ovnsb_db.db" /usr/share/ovn/ovn-sb.ovsschema
innode ovsdb-server "$DB/ovnnb_db.db" \
  --remote=punix:"$RUN/ovnnb_db.sock" \
  --remote=db:OVN_Northbound,NB_Global,connections \
  --pidfile="$RUN/ovnnb_db.pid" --unixctl="$RUN/ovnnb_db.ctl" \
  --log-file="$LOG/ovsdb-server-nb.log" --detach --no-chdir -vconsole:warn
innode ovsdb-server "$DB/ovnsb_db.db" \
  --remote=punix:"$RUN/ovnsb_db.sock" \
  --remote=db:OVN_Southbound,SB_Global,connections \
  --pidfile="$RUN/ovnsb_db.pid" --unixctl="$RUN/ovnsb_db.ctl" \
  --log-file="$LOG/ovsdb-server-sb.log" --detach --no-chdir -vconsole:warn
innode ovn-northd \
  --ovnnb-db="$OVN_NB_DB" --ovnsb-db="$OVN_SB_DB" \
  --pidfile="$RUN/ovn-northd.pid" --unixctl="$RUN/ovn-northd.ctl" \
  --log-file="$LOG/ovn-northd.log" --detach --no-chdir -vconsole:warn
ovn-nbctl --timeout=20 init 2>/dev/null || true

# ------------------------------------------------------------ ovn-controller
step "ovn-controller"
innode ovn-controller "unix:$RUN/db.sock" \
  --pidfile="$RUN/ovn-controller.pid" \
  --log-file="$LOG/ovn-controller.log" --detach --no-chdir -vconsole:warn

# ------------------------------------------------- OVN logical topology (NB)
step "NB topology: ovn_cluster_router, switch node1, LSPs, LB"
ovn-nbctl --timeout=20 \
  -- lr-add ovn_cluster_router \
  -- lrp-add ovn_cluster_router "$RTR_LRP" "$RTR_MAC" "$RTR_IP/24" \
  -- ls-add "$NODE_LS" \
  -- set Logical_Switch "$NODE_LS" other_config:subnet=10.244.1.0/24 \
                                   other_config:exclude_ips=10.244.1.2 \
  -- lsp-add "$NODE_LS" stor-node1 \
  -- lsp-set-type stor-node1 router \
  -- lsp-set-addresses stor-node1 router \
  -- lsp-set-options stor-node1 router-port="$RTR_LRP" \
  -- lsp-add "$NODE_LS" "$MP0_LSP" \
  -- lsp-set-addresses "$MP0_LSP" "$MP0_MAC $MP0_IP" \
  -- lsp-add "$NODE_LS" "$POD_LSP" \
  -- lsp-set-addresses "$POD_LSP" "$POD_MAC $POD_IP" \
  -- lsp-set-port-security "$POD_LSP" "$POD_MAC $POD_IP"
# ClusterIP service, named the way OVN-K 4.8/4.9 names it.
LB=Service_default/web_TCP_cluster
ovn-nbctl --timeout=20 \
  -- lb-add "$LB" "$VIP:$VIP_PORT" "$POD_IP:$POD_PORT" tcp \
  -- set Load_Balancer "$LB" external_ids:k8s.ovn.org/kind=Service \
                            external_ids:k8s.ovn.org/owner=default/web \
  -- ls-lb-add "$NODE_LS" "$LB"
[ "${SWITCH_LB:-1}" = 0 ] && ovn-nbctl --timeout=20 ls-lb-del "$NODE_LS" "$LB"

if [ "${GATEWAY_ROUTER:-0}" = 1 ]; then
  step "shared-gateway path: br-ex -> ext_node1 -> GR_node1 (load balancer) -> join -> ovn_cluster_router"
  ovs-vsctl --no-wait set Open_vSwitch . external_ids:ovn-bridge-mappings=physnet:br-ex
  ovn-nbctl --timeout=20 \
    -- ls-add ext_node1 \
    -- lsp-add ext_node1 br-ex_node1 -- lsp-set-type br-ex_node1 localnet \
    -- lsp-set-addresses br-ex_node1 unknown -- lsp-set-options br-ex_node1 network_name=physnet \
    -- lr-add GR_node1 -- set Logical_Router GR_node1 options:chassis="$NAME-node1" \
    -- lrp-add GR_node1 rtoe-GR_node1 0a:58:ac:12:00:01 "$BREX_GW/16" "$MASQ_NEXTHOP/29" \
    -- lsp-add ext_node1 etor-GR_node1 -- lsp-set-type etor-GR_node1 router \
    -- lsp-set-addresses etor-GR_node1 router -- lsp-set-options etor-GR_node1 router-port=rtoe-GR_node1 \
    -- ls-add join \
    -- lrp-add GR_node1 rtoj-GR_node1 0a:58:64:40:00:02 100.64.0.2/16 \
    -- lsp-add join jtor-GR_node1 -- lsp-set-type jtor-GR_node1 router \
    -- lsp-set-addresses jtor-GR_node1 router -- lsp-set-options jtor-GR_node1 router-port=rtoj-GR_node1 \
    -- lrp-add ovn_cluster_router rtoj-ovn_cluster_router 0a:58:64:40:00:01 100.64.0.1/16 \
    -- lsp-add join jtor-ovn_cluster_router -- lsp-set-type jtor-ovn_cluster_router router \
    -- lsp-set-addresses jtor-ovn_cluster_router router \
    -- lsp-set-options jtor-ovn_cluster_router router-port=rtoj-ovn_cluster_router \
    -- lr-route-add GR_node1 10.244.0.0/16 100.64.0.1 \
    -- lr-route-add ovn_cluster_router 172.18.0.0/16 100.64.0.2 \
    -- lr-route-add ovn_cluster_router "$MASQ_SUBNET" 100.64.0.2 \
    -- lr-lb-add GR_node1 "$LB"
  innode ip addr add "$MASQ_HOST/29" dev br-ex
fi

# -------------------------------------------- management port ovn-k8s-mp0
step "ovn-k8s-mp0 (OVS internal port on br-int = tap in $NS_NODE)"
ovs-vsctl --timeout=20 -- --may-exist add-port br-int ovn-k8s-mp0 \
  -- set Interface ovn-k8s-mp0 type=internal mtu_request=$MTU \
     mac=\"$MP0_MAC\" external_ids:iface-id="$MP0_LSP"
for i in $(seq 100); do innode ip link show ovn-k8s-mp0 >/dev/null 2>&1 && break; sleep 0.1; done
innode ip link set ovn-k8s-mp0 address "$MP0_MAC"   # no-op if mac= already applied
innode ip addr add "$MP0_IP/24" dev ovn-k8s-mp0
innode ip link set ovn-k8s-mp0 up

# ------------------------------------------------------------------- the pod
step "pod veth: eth0 in $NS_POD, $POD_HOST_IF on br-int"
innode ip link add "$POD_HOST_IF" mtu $MTU type veth peer name eth0 mtu $MTU netns "$NS_POD"
inpod ip link set eth0 address "$POD_MAC"
inpod ip addr add "$POD_IP/24" dev eth0
inpod ip link set eth0 up
inpod ip route add default via "$RTR_IP" dev eth0
# PITFALL: veth has TX checksum offload on by default, so TCP segments leave
# the pod with only a partial (pseudo-header) checksum.  The userspace
# datapath reads them raw through AF_PACKET and 3.1 does not complete them ->
# userspace conntrack (the LB's ct_lb) / the receiving kernel drop them.
# (Measured: with "tx on" both pod-IP and ClusterIP TCP time out and the
# vswitchd coverage counter conntrack_l4csum_err grows.  The host end's own
# tx setting does not matter: vswitchd injects full-checksum frames; the tap
# ovn-k8s-mp0 has no offloads at all -- OVS 3.1 opens it without vnet_hdr.)
inpod ethtool -K eth0 tx off >/dev/null
# PITFALL: with the userspace datapath the host-side veth end is still a
# normal interface of the node's kernel stack (OVS only *taps* it with
# AF_PACKET; with the kernel datapath the OVS rx_handler would swallow every
# frame).  The node kernel then answers the pod's ARP "who-has 10.244.1.2"
# itself, directly over the veth (bypassing OVS) with pod1-h's MAC, the pod's
# replies go straight to the node kernel un-NATed and the node answers with
# RST: ClusterIP traffic breaks while pod-IP traffic "works" around OVN.
# Make the port inert for the node stack, as it is on a real node:
innode ip link set "$POD_HOST_IF" arp off
innode sysctl -qw net.ipv6.conf."$POD_HOST_IF".disable_ipv6=1
innode ip link set "$POD_HOST_IF" up
ovs-vsctl --timeout=20 -- --may-exist add-port br-int "$POD_HOST_IF" \
  -- set Interface "$POD_HOST_IF" external_ids:iface-id="$POD_LSP" \
     external_ids:attached_mac="$POD_MAC" external_ids:ip_addresses="$POD_IP/24" \
     external_ids:sandbox="$NS_POD"

step "pod http server (python3 http.server on $POD_IP:$POD_PORT, see podhttp.py)"
mkdir -p "$BASE/www"; echo "hello from pod1 ($POD_IP)" > "$BASE/www/index.html"
( cd / && exec ip netns exec "$NS_POD" /usr/bin/python3 "$HERE/podhttp.py" \
    "$POD_IP" "$POD_PORT" "$BASE/www" </dev/null >"$LOG/httpd.log" 2>&1 ) &
echo $! > "$RUN/httpd.pid"

# ------------------------------------------------------- wait for OVN binding
step "waiting for northd + ovn-controller (nbctl --wait=hv)"
ovn-nbctl --timeout=60 --wait=hv sync
for i in $(seq 100); do
  up_mp0=$(ovn-nbctl get Logical_Switch_Port "$MP0_LSP" up 2>/dev/null || echo false)
  up_pod=$(ovn-nbctl get Logical_Switch_Port "$POD_LSP" up 2>/dev/null || echo false)
  [ "$up_mp0" = true ] && [ "$up_pod" = true ] && break; sleep 0.1
done
[ "$up_mp0" = true ] && [ "$up_pod" = true ] || { echo "LSPs not up: mp0=$up_mp0 pod=$up_pod" >&2; exit 1; }
for i in $(seq 50); do inpod bash -c "exec 3<>/dev/tcp/$POD_IP/$POD_PORT" 2>/dev/null && break; sleep 0.1; done

# ------------------------------------------------ the stale shared-mode route
step "stale shared-gateway service route on br-ex"
innode ip route add "$SVC_CIDR" via "$BREX_GW" dev br-ex mtu $MTU
if [ "${GATEWAY_ROUTER:-0}" = 1 ]; then
  # The route reaches the service through GR_node1, whose first answer toward br-ex waits on
  # learning br-ex's MAC (ovn-controller's put_arp, a MAC_Binding row through the SB database:
  # 0.37 s here idle, past a probe's 0.5 s timeout under load). A node's gateway router has long
  # learned it: this connection makes the bed's the same.
  step "one connection over the shared-gateway path (GR_node1 learns br-ex's MAC)"
  answered=no
  for i in $(seq 50); do innode curl -sf -o /dev/null -m 1 "http://$VIP:$VIP_PORT/" && answered=yes && break; sleep 0.1; done
  [ "$answered" = yes ] || { echo "the service never answered over br-ex and GR_node1" >&2; exit 1; }
  learned=$(ovn-sbctl --timeout=20 --bare --columns=mac find MAC_Binding logical_port=rtoe-GR_node1 ip="$BREX_IP")
  [ -n "$learned" ] || { echo "GR_node1 has no MAC_Binding of br-ex's $BREX_IP" >&2; exit 1; }
fi

step "bed '$NAME' is up.  Use: . $HERE/common.sh $NAME; innode ..."
