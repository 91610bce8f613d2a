"""Every diagnostic code paictl emits, with its severity and a one-line title.

Codes are stable: tools and pre-commit users filter on them. Add new ones; never renumber. `paictl explain`
and the README's table are generated from this mapping, so it is the single place a code is defined.
"""

from __future__ import annotations

from .diagnostics import Anchor, Finding, Severity

E, W = Severity.ERROR, Severity.WARNING

CODES: dict[str, tuple[Severity, str]] = {
    # Reading the file (the document never became a single YAML mapping)
    "E100": (E, "the file is not valid UTF-8"),
    "E101": (E, "YAML syntax error"),
    "E102": (E, "duplicate key in a mapping"),
    "E103": (E, "more than one YAML document in the file"),
    "E104": (E, "the document is not a mapping (empty, a list or a scalar)"),
    "E105": (E, "tab character used for indentation"),
    "E106": (E, "aliases expand to too many nodes (alias bomb) or nesting too deep"),
    "E107": (E, "the file is larger than the size limit"),
    "W101": (W, "more problems than are shown: a file reports at most 1,000 diagnostics"),
    "W102": (W, "a key written as a list or a mapping: OpenPAI's YAML reader makes it text ('[a, b]: v' is key 'a,b')"),
    # The OpenPAI rest-server's JSON schema
    "E200": (E, "schema violation"),
    "E201": (E, "a required key is missing"),
    "E202": (E, "unknown key"),
    "E203": (E, "a value has the wrong type"),
    "E204": (E, "a value is not one of the allowed values"),
    "E205": (E, "a name does not match the required pattern"),
    "E206": (E, "a value is out of range"),
    "E207": (E, "a list or mapping has too few entries"),
    "E208": (E, "invalid task role name"),
    "E209": (E, "a prerequisite matches none of the prerequisite kinds"),
    "E210": (E, "a `ports` list holds an entry that is no port count"),
    "E211": (E, "a placeholder in a field OpenPAI does not render (it must be a literal value)"),
    "E212": (E, "`extraContainerOptions.additionalProperties` is rejected by OpenPAI's schema"),
    # Upstream quirks: accepted by OpenPAI, almost certainly not what was meant
    "W201": (W, "unknown key in extraContainerOptions (accepted and ignored by OpenPAI)"),
    "W202": (W, "negative taskRetryCount (accepted by OpenPAI, means no retry)"),
    "W203": (W, "completion count of 0 (OpenPAI uses the default) or below -1 (FrameworkController rejects it)"),
    "W204": (W, "unknown key in defaults (accepted and ignored by OpenPAI)"),
    "W205": (W, "unknown key in a deployment (accepted and ignored by OpenPAI)"),
    "W206": (W, "a taskRoles value is not a mapping (accepted by OpenPAI's schema, meaningless)"),
    "W207": (W, "negative resource value (Kubernetes refuses the pod) or a port count below 1"),
    "W208": (W, "a storage entry OpenPAI skips (not a mapping with a name, or storages written as a string)"),
    "W209": (W, "a number with more than 4,300 digits: read as Infinity, as JavaScript (OpenPAI) reads it"),
    "W210": (W, "an infinite retry count: OpenPAI's Framework carries none, so FrameworkController never retries"),
    "W211": (W, "a port label named __proto__: OpenPAI's copy of the labels drops it, so it gets no port"),
    "W212": (W, "ports written as a list of counts: OpenPAI takes the indexes 0, 1, ... for its labels"),
    # OpenPAI's own semantic checks (the rest-server stops at the first; paictl reports all)
    "E301": (E, "duplicate prerequisite (same type and name)"),
    "E302": (E, "duplicate deployment name"),
    "E303": (E, "a task role's prerequisites list names an unknown prerequisite"),
    "E304": (E, "dockerImage/script/output/data names no prerequisite of that type"),
    "W304": (W, "script/output/data names no prerequisite but a member of JavaScript's Object.prototype, which OpenPAI finds"),
    "E305": (E, "defaults.deployment names no deployment"),
    "E306": (E, "extras.hivedScheduler does not match OpenPAI's HiveD schema (priority class, task role names, setting types)"),
    "W306": (W, "extras.hivedScheduler does not match OpenPAI's HiveD schema: a HiveD cluster refuses the job (E306 with a HiveD profile)"),
    "E307": (E, "HiveD: an unknown task role, both skuType and pinnedCellId, or an inconsistent affinity group (OpenPAI's HiveD 400s)"),
    "W307": (W, "HiveD settings a HiveD cluster refuses (an unknown task role, skuType with pinnedCellId, an inconsistent affinity group): E307 with a HiveD profile"),
    # Pitfalls users reported (OpenPAI accepts the job, then it misbehaves)
    "W401": (W, "a $parameters placeholder resolves to nothing"),
    "W402": (W, "a $secrets placeholder resolves to nothing"),
    "W403": (W, "a $script/$output/$data placeholder resolves to nothing"),
    "W404": (W, "task role names collide after OpenPAI's name conversion"),
    "W405": (W, "taskRetryCount is ignored while gang allocation is on"),
    "W406": (W, "a deployment names a task role the job does not have"),
    "W407": (W, "a completion count is larger than the task role's instances"),
    "W408": (W, "a placeholder in a field OpenPAI never renders"),
    "W409": (W, "a template tag OpenPAI drops or leaves literally (unknown name, section, partial...)"),
    # Compiling for a cluster (the job is valid, but not for this cluster profile)
    "E501": (E, "a cluster profile value contradicts another (port range, runtime image, SKU table, duplicate storage)"),
    "E502": (E, "an exit-rules file contradicts itself (duplicate code or phrase, missing default, a regex that does not compile)"),
    "W510": (W, "a -p/--parameters override names a parameter the job does not define"),
    "E601": (E, "the job names a storage the cluster profile does not have"),
    "E602": (E, "HiveD: a task role's skuType is not in the cluster's SKU table"),
    "E603": (E, "HiveD: a task role sets both skuType and pinnedCellId"),
    "E604": (E, "HiveD: a task role needs more than the cluster's cells can give (GPUs on a CPU SKU, more cells than a node), "
                 "or no cell at all (no gpu, cpu or memory)"),
    "E605": (E, "HiveD: extras.hivedScheduler names an unknown task role or priority class, or an inconsistent affinity group"),
    "E606": (E, "a converted task role name is empty, too long or clashes (FrameworkController names)"),
    "E607": (E, "native runtime: the job's ports do not fit in the profile's portRange"),
    "E608": (E, "native runtime: every pod lists every task's ports, and for this many task roles and ports the object would exceed Kubernetes' 3 MiB"),
    "E609": (E, "HiveD: a task role in an affinity group has no `instances` (OpenPAI's rest-server fails on the missing pod count)"),
    "E610": (E, "a compiled Kubernetes object is bigger than an API server accepts: annotations over 256 KiB in all (the Framework's config annotation holds the job text), an object over etcd's 1.5 MiB, Secret data over 1 MiB"),
    "E611": (E, "local docker runtime: a task role asks for what this machine's docker engine cannot give (GPUs without a GPU runtime, more GPUs or CPUs than it has, less memory than docker's 6 MB minimum)"),
    # Compiling any job for any target (protocol/compile_checks.py): upstream crashes or FrameworkController refuses
    "E801": (E, "taskRoles, or a task role, is not a mapping (OpenPAI's rest-server crashes; a list's roles 0, 1, "
                 "... its runtime cannot find)"),
    "E802": (E, "a count FrameworkController refuses: instances above 10,000, a retry count above int32 (or, "
                 "without gang allocation, a taskRetryCount below -2), completion outside -1..int32; or an infinite "
                 "count or resource, which JSON carries as null"),
    "E803": (E, "a rendered field (command, pre/postCommand, registry auth) that OpenPAI's template parser cannot parse"),
    "E804": (E, "a runtime plugin the runtime fails on: the list or an entry is no mapping, no `plugin` name, or `parameters` a number or boolean"),
    "W804": (W, "a runtime plugin's parameters that is a string or list: the plugin reads no setting from it"),
    "W805": (W, "hivedScheduler.taskRoles that is a number or boolean: OpenPAI ignores it, so no HiveD setting applies"),
    "E808": (E, "extras.storages (or teamwise_storage's names) of a shape OpenPAI crashes on, a non-string mountPath, a storage listed twice"),
    "W809": (W, "an unquoted date where a mapping belongs: OpenPAI reads a Date, takes it for an empty mapping and ignores it"),
    "E810": (E, "a placeholder OpenPAI's renderer throws on (a JavaScript built-in called on the view), or one paictl does not model"),
    "E811": (E, "a task role's docker image whose uri is empty or has blanks at either end: Kubernetes refuses the pod"),
    "W812": (W, "secrets that is an unquoted date: OpenPAI stores the date as the job's secrets file, which holds no secret"),
    "E806": (E, "defaults.virtualCluster is empty, not a valid Kubernetes label value, or null with HiveD"),
    # Compiling to a KubeDL MarsJob (--target mars)
    "E701": (E, "Mars: a task role is not scheduler, webservice or worker (case-insensitive), or two roles are the same one"),
    "E702": (E, "Mars: the job has no scheduler or no worker task role"),
    "E703": (E, "Mars: the scheduler task role has more than one instance"),
    "E704": (E, "Mars: extras.marsJob.webHost is set but the job has no webservice task role"),
    "E705": (E, "Mars: an extras.marsJob value is invalid (unknown key, wrong type, out of range)"),
    "E706": (E, "Mars: a port the job asks for is Mars's own port 11111"),
    "W701": (W, "Mars: extras.marsJob.memoryTuningPolicy (the tutorial's name) is read as workerMemoryTuningPolicy"),
    "W702": (W, "Mars: taskRetryCount of the scheduler is not applied (a restarted scheduler has lost the cluster state)"),
    "W703": (W, "Mars: taskRetryCount is no bound without a backoffLimit (KubeDL restarts an OnFailure pod for ever)"),
    # Marketplace items (paictl marketplace; the embedded job gets the codes above)
    "E880": (E, "marketplace item: a file it names (description or protocol) is missing or unreadable"),
    "E881": (E, "marketplace item: a file path leaves the item's folder (absolute, `..`, or a symlink pointing out)"),
    "E882": (E, "marketplace item: isPublic and isPrivate are both true"),
    "W880": (W, "marketplace item: groupList is dropped by the server because the item is public or private"),
    "W881": (W, "marketplace item: shared with groups only; the server never lists such items for non-admins"),
    "E883": (E, "marketplace item: a tag or category has a comma (the server splits on commas: never found)"),
    "E884": (E, "marketplace item: a NUL, or a control character in a name, author, tag, category or summary"),
    "W883": (W, "marketplace item: larger than the 100 kB body an OpenPAI marketplace server accepts (413)"),
    "E821": (E, "Grass: a task role's commands use $secrets, which Grass cannot deliver without exposing them"),
    "E822": (E, "Grass: an extras.grass value is invalid (unknown key, allocation mode or metric, mount)"),
    "E823": (E, "Grass: a task role asks for resources a node cannot reserve (cpu 0 or below, negative memory or gpu)"),
    # Compiling to a Kubernetes JobSet (--target jobset)
    "E901": (E, "JobSet: a name cannot become a DNS label within JobSet's 63-character limits (empty, too long, or two task roles clash)"),
    "W901": (W, "JobSet: minFailedInstances -1 or above 1 (tolerated failures) cannot be expressed: a failed instance fails the role's Job"),
    "W902": (W, "JobSet: OpenPAI's \"every task finished, so the job succeeded\" fallback has no JobSet equivalent"),
    "W903": (W, "JobSet: gang allocation needs a cluster add-on (Kueue); the profile names no queue"),
    "W904": (W, "JobSet: HiveD scheduling (extras.hivedScheduler: SKU types, pinned cells, priority) has no JobSet equivalent"),
    # Sweep search spaces (paictl sweep --space; NNI's search-space format)
    "E851": (E, "search space: a parameter the job does not define"),
    "W852": (W, "search space: a parameter the job's commands never use (every trial runs the same commands)"),
    "E853": (E, "search space: a value whose type does not fit the job's default for that parameter"),
    "E854": (E, "search space: a distribution that samples nothing (low not below high, q or sigma not above 0, a log scale from 0 or below) or can overflow a float"),
    "E855": (E, "search space: a type the chosen strategy cannot use (grid takes choice, randint and quantized types only)"),
}


def severity_of(code: str) -> Severity:
    return CODES[code][0]


def finding(code: str, pointer: str, message: str, hint: str | None = None, anchor: Anchor = Anchor.VALUE,
            excerpt: str | None = None) -> Finding:
    """A finding whose severity comes from the code's registration, so the two can never disagree."""
    return Finding(code=code, severity=severity_of(code), message=message, pointer=pointer, anchor=anchor,
                   hint=hint, excerpt=excerpt)
