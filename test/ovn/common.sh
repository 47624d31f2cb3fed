# common.sh -- sourced by up.sh / down.sh / probe.sh / verify.sh.
#
# One test bed is identified by NAME (default "otb").  Everything it creates
# is named after NAME, so several beds (or other people's namespaces on the
# same machine) never collide:
#   network namespaces  $NAME-node  (the OVN-Kubernetes "node" host network)
#                       $NAME-pod   (one pod)
#   state directory     $TOP/run/$NAME/{run,db,log}
# Every daemon runs INSIDE $NAME-node and talks only over unix sockets in
# $RUN, so nothing listens on or routes through the root namespace.

NAME=${1:-${NAME:-otb}}
case "$NAME" in
  *[!A-Za-z0-9_]*|"") echo "NAME must be [A-Za-z0-9_]+" >&2; exit 2;;
esac
[ ${#NAME} -le 12 ] || { echo "NAME too long (max 12)" >&2; exit 2; }

TOP=${OVN_BED_DIR:-${TMPDIR:-/tmp}/ovn-bed}
BASE=$TOP/run/$NAME
RUN=$BASE/run          # pidfiles, unixctl and db sockets, br-*.mgmt
DB=$BASE/db            # ovsdb files: conf.db, ovnnb_db.db, ovnsb_db.db
LOG=$BASE/log          # daemon logs
NS_NODE=$NAME-node
NS_POD=$NAME-pod

# The OVS/OVN tools locate their sockets/pidfiles through these variables;
# exporting them means plain "ovs-vsctl", "ovn-nbctl", "ovs-appctl -t
# ovn-controller ..." all talk to THIS bed and never to a system-wide default.
export OVS_RUNDIR=$RUN OVS_LOGDIR=$LOG OVS_DBDIR=$DB OVS_SYSCONFDIR=$BASE/etc
export OVN_RUNDIR=$RUN OVN_LOGDIR=$LOG OVN_DBDIR=$DB OVN_SYSCONFDIR=$BASE/etc
export OVN_NB_DB=unix:$RUN/ovnnb_db.sock OVN_SB_DB=unix:$RUN/ovnsb_db.sock
export OVS_DB=unix:$RUN/db.sock

# Addresses, shaped like OVN-Kubernetes on OpenShift 4.8/4.9 (node "node1",
# host subnet 10.244.1.0/24, cluster router ovn_cluster_router).  MACs follow
# OVN-K's rule 0a:58:<IPv4 bytes>.
NODE_LS=node1
MP0_LSP=k8s-node1;        MP0_IP=10.244.1.2; MP0_MAC=0a:58:0a:f4:01:02
RTR_LRP=rtos-node1;       RTR_IP=10.244.1.1; RTR_MAC=0a:58:0a:f4:01:01
POD_LSP=default_pod1;     POD_IP=10.244.1.3; POD_MAC=0a:58:0a:f4:01:03
POD_HOST_IF=pod1-h        # host-side veth end (in $NS_NODE, on br-int)
BREX_IP=172.18.0.2; BREX_GW=172.18.0.1   # BREX_GW intentionally does not exist
VIP=10.96.0.10; VIP_PORT=80; POD_PORT=8080; SVC_CIDR=10.96.0.0/16
MTU=1400
# The masquerade subnet of 4.12+ (169.254.169.0/29): br-ex holds .2, the service next hop is .4.
MASQ_SUBNET=169.254.169.0/29; MASQ_HOST=169.254.169.2; MASQ_NEXTHOP=169.254.169.4

innode() { ip netns exec "$NS_NODE" "$@"; }
inpod()  { ip netns exec "$NS_POD" "$@"; }

# alive PID: true while PID exists and is not a zombie
alive() { [ -r /proc/$1/stat ] && ! awk '{exit ($3=="Z")?0:1}' /proc/$1/stat 2>/dev/null; }

# kill_pidfile FILE EXPECTED_COMM: end one daemon by its PID, but only if the
# PID still belongs to the expected program (guards against PID reuse).
kill_pidfile() {
  local f=$1 comm=$2 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null) || return 0
  if [ -n "$pid" ] && [ -d /proc/$pid ] && grep -q "$comm" /proc/$pid/comm 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    # wait until it is gone or a zombie (detached daemons are re-parented to
    # PID 1, which may reap them only later)
    for i in $(seq 50); do alive "$pid" || break; sleep 0.05; done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
