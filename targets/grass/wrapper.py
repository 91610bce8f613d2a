"""The bash every Grass container runs around the task's commands, so the job behaves the same under paictl's master
and under a stock MARO master.

Under paictl's master (`PAICTL_MASTER=paictl` in the environment) the master has already set every PAI_* variable
and reads the container's exit status itself: the wrapper only runs the commands and passes their status through.

Under any other master (MARO's), nothing sets the PAI_* variables that depend on placement, and MARO's job tracker
cannot take most exit codes (maro.md D.3: any code outside {0, 64, 65} becomes `finish` or stops its tracker). So,
talking to the master's Redis in bash alone (RESP over /dev/tcp, as MARO's own Proxy uses Redis "for peer
discovering", maro.md A.10), the wrapper:
1. reads the job-wide PAI_* table from the job's record (`tags.paictl_env`: one copy per job, not one per task);
2. registers its node's address under `paictl:job:<JOB_ID>:hosts` (`<role>:<index>` -> address) and waits until
   every task of the job has, then sets PAI_HOST_IP_*, the host lists and PAI_CURRENT_CONTAINER_IP;
3. runs the commands under `bash -o errexit -o nounset -o pipefail` as their own process group (a stop reaches
   all of them; after a grace it kills them, so docker never has to);
4. records the commands' true exit status in `paictl:job:<JOB_ID>:exits` (`<container>` -> code), which paictl
   reads for the verdict, and exits with a status MARO handles: 0 for 0; for a failure 65 when one failed task
   fails the job (OpenPAI's default, minFailedInstances 1: MARO then stops the job's other containers, as
   OpenPAI would) else 64 (failed, never restarted); 64 when it was stopped.
The Redis address comes from the cluster the job was submitted to (`PAICTL_REDIS`, host:port). A master Redis with a
password is not reachable from a container (paictl never puts a password into a job), which is fine under paictl's
own master, and a stock MARO master's Redis has none.
"""

from __future__ import annotations

import functools
import shlex
from typing import Mapping, Optional

#: Seconds to wait for every peer to register (image pulls may hold some containers back), and between a stop's
#: SIGTERM and SIGKILL (below docker stop's 10 s, so the wrapper, not docker, ends the commands).
DISCOVERY_SECONDS = 600
STOP_GRACE_SECONDS = 8
HOSTS_KEY = "paictl:job:{job_id}:hosts"
EXITS_KEY = "paictl:job:{job_id}:exits"
#: The job record's tag holding the job-wide PAI_* table ("NAME=value NAME=value ..."; values never need quoting).
ENV_TAG = "paictl_env"

# The runtime, as one bash text. Variables and functions start with _paictl so no task command is disturbed.
_LIBRARY = r"""
_paictl_fd=
printf -v _paictl_cr "\r"
printf -v _paictl_crlf "\r\n"
# Redis parses the records (cjson), so bash never reads their JSON; a malformed record is an error reply.
_paictl_lua_job="local r = redis.call([[HGET]], KEYS[1], ARGV[1])
if not r then return redis.error_reply([[no record]]) end
local ok, j = pcall(cjson.decode, r)
if not ok or type(j) ~= [[table]] or type(j.tags) ~= [[table]] or type(j.tags.@TAG@) ~= [[string]] then
  return redis.error_reply([[the record has no tags.@TAG@ (not submitted by paictl?)]]) end
return j.tags.@TAG@"
_paictl_lua_node="local r = redis.call([[HGET]], KEYS[1], ARGV[1])
if not r then return redis.error_reply([[no record]]) end
local ok, n = pcall(cjson.decode, r)
if not ok or type(n) ~= [[table]] then return redis.error_reply([[a malformed record]]) end
for _, k in ipairs({[[private_ip_address]], [[hostname]]}) do
  if type(n[k]) == [[string]] and n[k]:match([[^[%w%.:%-]+$]]) then return n[k] end end
return redis.error_reply([[the record has no address]])"
_paictl_connect() {
  [ -n "$_paictl_fd" ] && return 0
  [ -n "${PAICTL_REDIS-}" ] || { _paictl_why="no Redis address (compile or submit with --cluster)"; return 1; }
  exec {_paictl_fd}<>"/dev/tcp/${PAICTL_REDIS%:*}/${PAICTL_REDIS##*:}" 2>/dev/null \
    || { _paictl_fd=; _paictl_why="cannot reach the Redis of the master at $PAICTL_REDIS"; return 1; }
}
_paictl_read() {  # one RESP reply: _R (a string or number) or _RA (an array); 1 no answer, 2 error, 3 nil
  local line n i LC_ALL=C
  IFS= read -r -t 15 line <&"$_paictl_fd" || return 1
  line=${line%"$_paictl_cr"}
  case $line in
    "\$-1"|"*-1") _R=; return 3 ;;
    "\$"*) n=${line#?}; _R=
           if [ "$n" -gt 0 ]; then IFS= read -r -d "" -N "$n" -t 15 _R <&"$_paictl_fd" || return 1; fi
           IFS= read -r -t 15 line <&"$_paictl_fd" ;;
    ":"*|"+"*) _R=${line#?} ;;
    "-"*) _R=${line#?}; _paictl_why="redis: $_R"; return 2 ;;
    "*"*) n=${line#?}; _RA=()
          for ((i = 0; i < n; i++)); do _paictl_read || return 1; _RA+=("$_R"); done ;;
    *) return 1 ;;
  esac
  return 0
}
_paictl_redis() {
  local out arg code LC_ALL=C
  _paictl_connect || return 1
  out="*$#$_paictl_crlf"
  for arg; do out+="\$${#arg}$_paictl_crlf$arg$_paictl_crlf"; done
  printf "%s" "$out" >&"$_paictl_fd" 2>/dev/null || { exec {_paictl_fd}>&-; _paictl_fd=; return 1; }
  _paictl_read; code=$?
  if [ "$code" -eq 1 ]; then
    exec {_paictl_fd}>&- 2>/dev/null; _paictl_fd=; _paictl_why="the Redis of the master did not answer"
  fi
  return "$code"
}
_paictl_retry() {  # a command to Redis, retried for up to a minute while Redis is unreachable
  local tries=0 code
  while :; do
    _paictl_redis "$@"; code=$?
    [ "$code" -ne 1 ] && return "$code"
    tries=$((tries + 1)); [ "$tries" -ge 60 ] && return 1
    sleep 1
  done
}
_paictl_setup() {  # the job-wide table, then peer discovery (see wrapper.py)
  local kv key deadline delay role r i total list instances items host
  _paictl_retry EVAL "$_paictl_lua_job" 1 name_to_job_details "${JOB_NAME-}" \
    || { _paictl_why="job ${JOB_NAME-?}: ${_paictl_why-}"; return 1; }
  read -r -a items <<< "$_R"
  for kv in "${items[@]}"; do
    [[ $kv =~ ^PAI_[A-Za-z0-9_]+=[A-Za-z0-9_.,~-]*$ ]] || { _paictl_why="job $JOB_NAME: a bad entry in tags.@TAG@"; return 1; }
    export "$kv"
  done
  _paictl_retry EVAL "$_paictl_lua_node" 1 name_to_node_details "${NODE_NAME-}" \
    || { _paictl_why="node ${NODE_NAME-?}: ${_paictl_why-}"; return 1; }
  host=$_R
  key="paictl:job:$JOB_ID:hosts"
  _paictl_retry HSET "$key" "$COMPONENT_TYPE:$COMPONENT_INDEX" "$host" || return 1
  total=${PAI_JOB_TASK_COUNT:-1}; delay=0.1; deadline=$((SECONDS + ${PAICTL_DISCOVERY_SECONDS:-@DISCOVERY@}))
  while :; do
    _paictl_retry HLEN "$key" || return 1
    [ "$_R" -ge "$total" ] && break
    [ "$SECONDS" -ge "$deadline" ] && { _paictl_why="only $_R of $total tasks registered in $key"; return 1; }
    sleep "$delay"; case $delay in 0.1) delay=0.5 ;; 0.5) delay=1 ;; 1) delay=2 ;; esac
  done
  _paictl_retry HGETALL "$key" || return 1
  declare -A hosts=()
  for ((i = 0; i + 1 < ${#_RA[@]}; i += 2)); do hosts[${_RA[i]}]=${_RA[i+1]}; done
  instances=
  for role in ${PAI_TASK_ROLE_LIST//,/ }; do
    r=${role,,}; r=${r//[^a-z0-9]/}; list=
    eval "total=\${PAI_TASK_ROLE_TASK_COUNT_$role:-0}"
    for ((i = 0; i < total; i++)); do
      export "PAI_HOST_IP_${r}_$i=${hosts[$role:$i]-}"
      list+=${list:+,}${hosts[$role:$i]-}; instances+=${instances:+,}$r:$i
    done
    export "PAI_TASK_ROLE_${r}_HOST_LIST=$list"
  done
  export PAI_TASK_ROLE_INSTANCES=$instances PAI_CURRENT_CONTAINER_IP=$host PAI_CONTAINER_HOST_IP=$host
}
_paictl_child=
_paictl_stopped=
_paictl_stop() {
  _paictl_stopped=1
  [ -n "$_paictl_child" ] || exit 64
  kill -TERM -- "-$_paictl_child" 2>/dev/null
  (sleep @GRACE@; kill -KILL -- "-$_paictl_child") >/dev/null 2>&1 &
}
_paictl_run() {
  local code i managed=1
  [ "${PAICTL_MASTER-}" = paictl ] && managed=
  trap _paictl_stop TERM INT HUP
  if [ -n "$managed" ] && ! _paictl_setup; then
    echo "paictl: cannot start the task: ${_paictl_why-}" >&2
    _paictl_redis HSET "paictl:job:${JOB_ID-}:exits" "${CONTAINER_NAME-}" 1 >/dev/null 2>&1
    exit 64
  fi
  set -m
  bash -o errexit -o nounset -o pipefail -c "$1" &
  _paictl_child=$!
  set +m
  (echo 1000 > "/proc/$_paictl_child/oom_score_adj") 2>/dev/null
  while :; do
    wait "$_paictl_child"; code=$?
    kill -0 "$_paictl_child" 2>/dev/null || break
  done
  if [ "$code" -gt 128 ] && [ -n "$_paictl_stopped" ]; then
    wait "$_paictl_child" 2>/dev/null; i=$?; [ "$i" -ne 127 ] && code=$i
  fi
  [ -n "$managed" ] || exit "$code"
  _paictl_retry HSET "paictl:job:$JOB_ID:exits" "$CONTAINER_NAME" "$code" >/dev/null \
    || echo "paictl: exit status $code not recorded: ${_paictl_why-}" >&2
  [ "$code" -eq 0 ] && exit 0
  [ -n "$_paictl_stopped" ] && exit 64
  exit "${PAICTL_FAIL_STATUS:-64}"
}
"""


@functools.lru_cache(maxsize=1)
def library() -> str:
    """The runtime as the commands carry it (comment lines dropped: it is repeated in every task role's command)."""
    text = (_LIBRARY.replace("@TAG@", ENV_TAG).replace("@DISCOVERY@", str(DISCOVERY_SECONDS))
            .replace("@GRACE@", str(STOP_GRACE_SECONDS)).strip("\n"))
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "'" not in text  # so the command can quote it once (`command`)
    return text


def _head(exports: Mapping[str, str], redis: Optional[str], fail_status: int) -> str:
    lines = [f"PAICTL_REDIS=${{PAICTL_REDIS-{shlex.quote(redis) if redis else ''}}}",
             f"PAICTL_FAIL_STATUS={fail_status}"]
    for name, value in exports.items():
        # Double quotes keep the script readable; a value the shell would expand is single-quoted instead.
        # Only $COMPONENT_INDEX (MARO's variable) is meant to expand.
        plain = value == "$COMPONENT_INDEX" or not any(c in value for c in '$`"\\!\'')
        lines.append(f"export {name}=" + (f'"{value}"' if plain else shlex.quote(value)))
    return "\n".join(lines)


def script(exports: Mapping[str, str], entrypoint: str, *, redis: Optional[str], fail_status: int) -> str:
    """The whole script: where Redis is, the task's own variables, the runtime, then the commands."""
    return "\n".join((_head(exports, redis, fail_status), library(), f"_paictl_run {shlex.quote(entrypoint)}"))


def _quoted(text: str) -> str:
    """The inside of shlex.quote's single quotes."""
    return text.replace("'", "'\"'\"'")


def command(exports: Mapping[str, str], entrypoint: str, *, redis: Optional[str], fail_status: int) -> str:
    """The component's `command`: one shell word list (MARO formats it into `docker run ... IMAGE COMMAND`);
    the same text as `bash -c {shlex.quote(script(...))}`, the runtime quoted once rather than once per role."""
    return (f"bash -c '{_quoted(_head(exports, redis, fail_status))}\n{library()}\n"
            f"{_quoted(f'_paictl_run {shlex.quote(entrypoint)}')}'")
