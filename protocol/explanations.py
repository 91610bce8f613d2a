"""What `paictl explain CODE` prints beyond the one-line title: why the code fires, a job fragment that triggers
it, and the fix (what the diagnostic's hint tells you to do). One entry per code of codes.py; a test checks that
every code has all three.
"""

from __future__ import annotations

#: code -> (explanation, example, fix)
EXPLANATIONS: dict[str, tuple[str, str, str]] = {
    "E100": ("The file is not UTF-8 text (OpenPAI and YAML 1.2 read UTF-8; a UTF-8 BOM is allowed).",
             "a job saved as UTF-16 or Latin-1 by an editor",
             "re-save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 job.yaml`)"),
    "E101": ("The YAML parser stopped: the text is not YAML (an unclosed quote or bracket, bad indentation).",
             "commands: [python train.py",
             "fix the syntax at the reported position; paictl stops there because a parser cannot go further"),
    "E102": ("A mapping has the same key twice; YAML forbids it, and js-yaml in OpenPAI refuses the job.",
             "taskRoles:\n  train: {...}\n  train: {...}",
             "remove or rename one of the two keys"),
    "E103": ("A job file holds one YAML document; a `---` separator started a second one.",
             "name: a\n---\nname: b",
             "split the documents into separate files"),
    "E104": ("A job is a YAML mapping (key: value); the file is empty, a list or a single value.",
             "- protocolVersion: 2",
             "write the job as a mapping at the top level (no leading `- `)"),
    "E105": ("YAML does not allow tab characters in indentation.",
             "taskRoles:\n\ttrain: ...",
             "indent with spaces"),
    "E106": ("YAML aliases (*a) expand to more than 100,000 nodes, or the nesting is too deep: an alias bomb.",
             "a: &a [x, x]\nb: &b [*a, *a]\n...",
             "write the values out, or use fewer nested aliases"),
    "E107": ("The file is larger than 2 MiB, far beyond any real job; paictl refuses to read it.",
             "a job with megabytes of inline data in `commands`",
             "move large data to a storage or a script prerequisite"),
    "E200": ("The job breaks OpenPAI's JSON schema in a way no more specific code describes.",
             "jobRetryCount: {}",
             "follow the message: it quotes the schema rule; `paictl schema` prints the whole schema"),
    "E201": ("A key the schema requires is missing; the diagnostic points at the mapping that lacks it.",
             "protocolVersion: 2\nname: demo\ntype: job   # no taskRoles",
             "add the missing key named in the message"),
    "E202": ("A key the schema does not know; OpenPAI refuses the job (no additional properties).",
             "completion:\n  minSucceededTaskCount: 1",
             "use the suggested key (here `minSucceededInstances`) or remove it"),
    "E203": ("A value has the wrong type: a string where a number is needed, a mapping where a list is needed.",
             "instances: \"2\"",
             "write the value with the type the message names (here `instances: 2`)"),
    "E204": ("A value is not one of the values the schema allows.",
             "type: jobs",
             "use one of the allowed values listed in the message (here `type: job`)"),
    "E205": ("A name does not match the pattern OpenPAI requires (job names: letters, digits, `_` and `-`).",
             "name: my job!",
             "rename it to match the pattern quoted in the message (e.g. `name: my-job`)"),
    "E206": ("A number is outside the range the schema allows.",
             "instances: 0",
             "use a value inside the range the message gives (here at least 1)"),
    "E207": ("A list or mapping has fewer entries than the schema requires.",
             "taskRoles: {}",
             "add at least the number of entries the message names"),
    "E208": ("A task role name must be letters and digits only (OpenPAI's pattern), no `-` or spaces.",
             "taskRoles:\n  ps-server: ...",
             "rename the task role (e.g. `psserver` or `ps_server`) and its references"),
    "E209": ("A prerequisite matches none of the kinds (dockerimage, script, output, data): a key or type is wrong.",
             "prerequisites:\n  - name: img\n    type: docker\n    uri: ubuntu",
             "fix the prerequisite's `type` (dockerimage, script, output, data) or its keys"),
    "E210": ("`ports` is a mapping from a label to a port count. Written as a list, OpenPAI takes the indexes 0, 1, "
             "... for labels and the entries for their counts; an entry that is not a number (`- http: 1`) leaves "
             "the runtime no count to allocate, so its ports never exist.",
             "resourcePerInstance:\n  ports:\n    - http: 1",
             "write `ports: {http: 1}` (the count of ports to allocate under that label)"),
    "E211": ("A placeholder (<% ... %>) in a field OpenPAI uses as is (a name, a count): it is never rendered.",
             "instances: <% $parameters.n %>",
             "write a literal value there; placeholders work in commands"),
    "E212": ("OpenPAI's schema rejects a key literally named `additionalProperties` in extraContainerOptions.",
             "extraContainerOptions:\n  additionalProperties: true",
             "remove the key"),
    "W201": ("An unknown key in extraContainerOptions: OpenPAI accepts and ignores it.",
             "extraContainerOptions:\n  shmMb: 64",
             "use a key OpenPAI knows (the suggestion, e.g. `shmMB`) or remove it"),
    "W202": ("A negative taskRetryCount is accepted by OpenPAI and means no retry.",
             "taskRetryCount: -1",
             "write `taskRetryCount: 0` to say no retry"),
    "W203": ("A completion count of 0 makes OpenPAI use its default; below -1 FrameworkController rejects it.",
             "completion:\n  minFailedInstances: 0",
             "use -1 (never), a positive count, or remove the key for the default"),
    "W204": ("An unknown key in `defaults`: OpenPAI accepts and ignores it.",
             "defaults:\n  virtualCluster: default",
             "use `virtualCluster`/`deployment` spelt as OpenPAI does (the suggestion) or remove it"),
    "W205": ("An unknown key in a deployment: OpenPAI accepts and ignores it.",
             "deployments:\n  - name: d\n    taskroles: {}",
             "use `taskRoles` (the suggestion) or remove the key"),
    "W206": ("A taskRoles value is not a mapping: the schema lets it through, but it describes no task role.",
             "taskRoles:\n  train: null",
             "write the task role as a mapping (instances, dockerImage, commands, ...)"),
    "W207": ("A negative resource (Kubernetes refuses the pod) or a port count below 1.",
             "resourcePerInstance: {cpu: -1, memoryMB: 512, gpu: 0}",
             "use zero or a positive number"),
    "W208": ("OpenPAI mounts a storage only for an entry that is a mapping with a name; a string, a number, `{}` "
             "or an empty name is skipped without a word, and `storages` written as one string is read character by "
             "character, so nothing is mounted.",
             "extras:\n  storages: [confignfs]",
             "write `storages: [{name: confignfs}]`"),
    "W209": ("A decimal integer of more than 4,300 digits. js-yaml (OpenPAI) reads it as a JavaScript number, which "
             "for so many digits is Infinity (a placeholder prints `Infinity`); paictl reads it the same way, without "
             "Python's quadratic big-integer conversion.",
             "parameters:\n  seed: 1111...1111   # 5,000 digits",
             "quote it if it is meant as text"),
    "W210": ("A retry count of .inf or -.inf. ajv (OpenPAI's schema) takes Infinity for an integer; JSON cannot "
             "carry it, so the Framework holds null, which the API server drops: FrameworkController never retries. "
             "paictl compiles 0, the count FrameworkController ends up with.",
             "jobRetryCount: .inf",
             "write the number of retries you want"),
    "W211": ("A port label named `__proto__`. OpenPAI copies the labels into a plain JavaScript object, where "
             "assigning `__proto__` sets the object's prototype instead of adding a key: the port scheduling spec "
             "has no such label, and the task gets no port for it. paictl leaves it out too.",
             "resourcePerInstance:\n  ports: {__proto__: 1}",
             "rename the label"),
    "W212": ("`ports` written as a list of counts (`ports: [2, 3]`). OpenPAI runs it: the list's indexes become the "
             "port labels (`0`, `1`, ...) and its entries their counts, so the task finds its ports in "
             "$PAI_CONTAINER_HOST_0_PORT_LIST and so on. paictl compiles the same labels; a mapping of label to count "
             "was probably meant.",
             "resourcePerInstance:\n  ports: [2, 3]",
             "write `ports: {http: 2, grpc: 3}`"),
    "E301": ("Two prerequisites share a type and a name; OpenPAI refuses the job.",
             "prerequisites:\n  - {name: img, type: dockerimage, uri: a}\n  - {name: img, type: dockerimage, uri: b}",
             "rename or remove one of them"),
    "E302": ("Two deployments share a name; OpenPAI refuses the job.",
             "deployments:\n  - name: d\n  - name: d",
             "rename or remove one of them"),
    "E303": ("A task role's `prerequisites` list names a prerequisite the job does not declare.",
             "taskRoles:\n  train:\n    prerequisites: [setup]",
             "declare it under the job's `prerequisites`, or use the suggested name"),
    "E304": ("dockerImage, script, output or data names no prerequisite of that type.",
             "dockerImage: pytorch   # no dockerimage prerequisite named pytorch",
             "declare a prerequisite of that type with that name, or use the suggested name"),
    "W304": ("script, output or data names no prerequisite of that type, but a name a plain JavaScript object "
             "already answers (`constructor`, `toString`, ...). OpenPAI checks the name with `in`, finds Object."
             "prototype's member, and runs the job; placeholders of that root (`<% $script.uri %>`) render from the "
             "member (mostly empty). paictl compiles the same; a prerequisite was probably meant. (For dockerImage it "
             "stays E304: the pod would have no image.)",
             "taskRoles:\n  worker:\n    script: constructor",
             "name a prerequisite of that type, or remove the field"),
    "E305": ("defaults.deployment names a deployment the job does not have.",
             "defaults:\n  deployment: prod",
             "name one of the job's deployments, or remove defaults.deployment"),
    "E306": ("extras.hivedScheduler breaks OpenPAI's HiveD schema, which a cluster running HiveD checks on every "
             "submission: hivedScheduler is a mapping, jobPriorityClass is prod, test or oppo, taskRoles has at "
             "least one entry, each named with letters, digits, `.`, `_` or `~` and each a mapping whose skuType, "
             "pinnedCellId and affinityGroupName are strings or null.",
             "extras:\n  hivedScheduler:\n    jobPriorityClass: crit",
             "use one of the allowed values, or quote a setting that YAML reads as a number"),
    "W306": ("The job's extras.hivedScheduler breaks OpenPAI's HiveD schema. Only a cluster running HiveD checks "
             "it (and then refuses the job, E306); any other cluster runs the job and ignores the settings, so "
             "without a HiveD profile paictl warns.",
             "extras:\n  hivedScheduler:\n    jobPriorityClass: urgent",
             "fix the settings if the job is meant for a HiveD cluster (validate with `--profile` of that cluster), "
             "or remove extras.hivedScheduler"),
    "W307": ("HiveD settings OpenPAI's HiveD code refuses on a HiveD cluster (E307 there): a task role the job "
             "lacks, both skuType and pinnedCellId, or one affinity group with different SKUs. Other clusters "
             "ignore the settings, so without a HiveD profile paictl warns.",
             "extras:\n  hivedScheduler:\n    taskRoles:\n      trainer: {skuType: K80}",
             "name the job's own task roles, one of skuType and pinnedCellId, one SKU per affinity group"),
    "E307": ("OpenPAI's HiveD code refuses the job (HTTP 400): hivedScheduler.taskRoles names a task role the job "
             "does not have, a task role sets both skuType and pinnedCellId (an empty string counts as set), or "
             "two task roles of one affinity group differ in skuType or pinnedCellId.",
             "extras:\n  hivedScheduler:\n    taskRoles:\n      train: {skuType: K80, pinnedCellId: ''}",
             "name the job's task roles, set one of skuType or pinnedCellId, and keep an affinity group uniform"),
    "W401": ("A <% $parameters.x %> placeholder names no parameter: OpenPAI leaves the text in the command as is.",
             "commands: [python mnist.py --epochs <% $parameters.epoch %>]",
             "define the parameter under `parameters`, or use the suggested name"),
    "W402": ("A <% $secrets.x %> placeholder names no secret: OpenPAI leaves the text in the command as is.",
             "commands: [login --token <% $secrets.tokn %>]",
             "define the secret under `secrets`, or use the suggested name"),
    "W403": ("A $script/$output/$data placeholder resolves to nothing: the task role names no such prerequisite.",
             "commands: [cd <% $script.uri %>]   # the task role has no script",
             "set the task role's `script`/`output`/`data`, or remove the placeholder"),
    "W404": ("Two task role names become the same after OpenPAI's conversion (lower case, `_` removed): the pods "
             "and variables of one overwrite the other's.",
             "taskRoles:\n  ps_server: ...\n  psserver: ...",
             "rename one of the task roles"),
    "W405": ("With gang allocation on, OpenPAI never retries a task (a failed task fails the job), so "
             "taskRetryCount does nothing.",
             "taskRetryCount: 3   # extras.gangAllocation is true by default",
             "set `extras.gangAllocation: false` to let tasks retry, or remove taskRetryCount"),
    "W406": ("A deployment names a task role the job does not have; OpenPAI ignores that part of it.",
             "deployments:\n  - name: d\n    taskRoles:\n      trian: {preCommands: [...]}",
             "use the task role's real name (the suggestion) or remove the entry"),
    "W407": ("A completion count larger than the instances can never be reached: the job cannot end that way.",
             "instances: 2\ncompletion:\n  minSucceededInstances: 3",
             "use at most the number of instances, or -1"),
    "W408": ("A placeholder in a field OpenPAI never renders stays in the value literally.",
             "description: run <% $parameters.n %> epochs",
             "write the value literally; placeholders are rendered in commands and deployments only"),
    "W409": ("A template tag OpenPAI's renderer drops or prints literally (an unknown name, a section, a partial).",
             "commands: [echo <% $jobname %>]",
             "use one of the names OpenPAI renders ($parameters, $secrets, $script, $output, $data, "
             "$jobName...) or remove the tag"),
    "E501": ("The cluster profile contradicts itself (a port range, runtime image, SKU table or storage clash).",
             "portRange: {min: 30000, max: 20000}",
             "fix the profile value the message names (`paictl schema profile` describes the file)"),
    "E502": ("An --exit-spec rules file contradicts itself (a duplicate code or phrase, no default rule, a regex "
             "that does not compile).",
             "two rules with code 137",
             "fix the rule the message names (`paictl schema exit-rules` describes the file)"),
    "W510": ("A `-p KEY=VALUE` or `--parameters FILE` override names a parameter the job does not define: it "
             "changes nothing (a typo is the usual cause).",
             "paictl submit job.yaml -p epoch=5   # the job defines `epochs`",
             "use the suggested name, or add the parameter to the job's `parameters`"),
    "E601": ("The job names a storage the cluster profile does not define.",
             "extras:\n  storages: [{name: nfs-data}]",
             "use a storage of the profile (the suggestion) or add it to the profile"),
    "E602": ("HiveD: the task role's skuType is not in the cluster profile's SKU table.",
             "hivedScheduler:\n  taskRoles:\n    train: {skuType: V100}",
             "use one of the SKU types the message lists"),
    "E603": ("HiveD: a task role sets both skuType and pinnedCellId; HiveD takes one or the other.",
             "train: {skuType: K80, pinnedCellId: cell-1}",
             "keep only one of them"),
    "E604": ("HiveD: the task role asks for more than the cluster's cells give (GPUs on a CPU SKU, more than a "
             "node holds), or for nothing at all: OpenPAI then gives it 0 leaf cells, and HiveD refuses the pod.",
             "resourcePerInstance: {gpu: 16}   # nodes have 8",
             "ask for at most what one node of that SKU has"),
    "E605": ("HiveD: extras.hivedScheduler names an unknown task role or priority class, or its affinity groups "
             "disagree.",
             "hivedScheduler:\n  jobPriorityClass: urgent",
             "use a task role / priority class the job and profile have (the suggestion)"),
    "E606": ("A task role name converted for FrameworkController is empty, too long or clashes with another.",
             "a 70-character task role name",
             "use a shorter, distinct task role name"),
    "E607": ("Native runtime: the ports the job asks for do not fit in the profile's portRange.",
             "resourcePerInstance: {ports: {http: 5000}}",
             "ask for fewer ports, or widen the profile's portRange"),
    "E608": ("Native runtime: each pod's start script exports every task's port variables, so the object grows with "
             "task roles times ports; past 3 MiB (the Kubernetes API server's request limit) it could never be "
             "created.",
             "10,000 task roles",
             "use fewer task roles (instances of one role share its variables), or a profile with OpenPAI's runtime"),
    "E610": ("Kubernetes targets: every API server refuses an object whose annotations take over 256 KiB in all (422), "
             "one over etcd's 1.5 MiB request limit, or a Secret holding over 1 MiB; the Framework's `config` "
             "annotation carries the whole job text, as OpenPAI stores it, so a job file over 256 KiB validates but "
             "can never be submitted as a Framework.",
             "a job file of 300 KiB (a long inline script in commands)",
             "ship large content in the image, a volume or a storage, and keep the job file small"),
    "E611": ("Local docker runtime: each task runs in a container limited to its resourcePerInstance; a container "
             "cannot get GPUs from an engine without NVIDIA's container runtime, nor more GPUs or CPUs than the "
             "machine has (on a cluster such a task would stay pending).",
             "resourcePerInstance: {cpu: 64, memoryMB: 1024, gpu: 2}",
             "ask for what this machine has, run it with --runtime host (no limits, no GPUs isolated), or submit "
             "it to a cluster"),
    "E701": ("Mars: every task role must be scheduler, webservice or worker (any case), each at most once.",
             "taskRoles:\n  master: ...",
             "rename the task roles to scheduler, webservice and worker"),
    "E702": ("Mars: a MarsJob needs a scheduler and a worker task role.",
             "taskRoles:\n  worker: ...   # no scheduler",
             "add the missing task role"),
    "E703": ("Mars: the scheduler is a single process; more than one instance cannot work.",
             "scheduler:\n  instances: 2",
             "set `instances: 1` for the scheduler"),
    "E704": ("Mars: extras.marsJob.webHost needs a webservice task role to serve it.",
             "extras:\n  marsJob: {webHost: mars.example.com}",
             "add a webservice task role or remove webHost"),
    "E705": ("Mars: a value under extras.marsJob is invalid (unknown key, wrong type, out of range).",
             "extras:\n  marsJob: {workerCacheSize: lots}",
             "fix the key or value the message names"),
    "E706": ("Mars: port 11111 is Mars's own service port; a task cannot ask for it.",
             "ports: {mars: 11111}",
             "use another port"),
    "W701": ("Mars: `memoryTuningPolicy` (the tutorial's name) is read as workerMemoryTuningPolicy.",
             "extras:\n  marsJob: {memoryTuningPolicy: {...}}",
             "write `workerMemoryTuningPolicy`"),
    "W702": ("Mars: the scheduler is never restarted with its state, so its taskRetryCount is not applied.",
             "scheduler:\n  taskRetryCount: 3",
             "remove taskRetryCount from the scheduler (retry the job instead)"),
    "W703": ("Mars: a task role with taskRetryCount > 0 (gang allocation off) gets restartPolicy OnFailure, and KubeDL "
             "bounds the restarts of such pods only with the MarsJob's backoffLimit, one budget for the whole job. "
             "With jobRetryCount 0 and no extras.marsJob.backoffLimit there is none: a task that keeps failing is "
             "restarted for ever, where OpenPAI gives up after taskRetryCount retries and fails the job.",
             "taskRoles:\n  worker:\n    taskRetryCount: 3\nextras:\n  gangAllocation: false",
             "set extras.marsJob.backoffLimit (restarts allowed across the job), or jobRetryCount"),
    "W101": ("A file reports at most 1,000 diagnostics, errors first; this one line says there are more.",
             "a generated job with thousands of misspelt keys",
             "fix the problems shown and validate again"),
    "W102": ("A mapping key written as a flow list or mapping (`[a, b]: v`, `? {x: 1}`). YAML allows it; OpenPAI's "
             "YAML reader (js-yaml 3) turns it into JavaScript's text of it: a list's items joined with commas "
             "(`a,b`), a mapping `[object Object]`. The job runs with that key (in `extras` or `parameters` it is "
             "passed on as written); paictl reads it the same way. A list holding a list is refused (E101), as "
             "js-yaml refuses it.",
             "extras:\n  [a, b]: v",
             "write the key as a string: `'a,b': v`"),
    "E609": ("On a HiveD cluster every task role of an affinity group (the job's default gang group, or a named "
             "`affinityGroupName`) is listed with its pod count, which OpenPAI takes from `instances` as written. "
             "Without `instances` the count is undefined, js-yaml refuses to write it, and the submission fails "
             "(elsewhere a missing `instances` means 1).",
             "taskRoles:\n  worker:\n    dockerImage: img\n    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 1}",
             "write `instances: 1`"),
    "E801": ("taskRoles (or one task role) is not a mapping. OpenPAI's rest-server crashes on most such values; a "
             "list of task roles it runs under the names 0, 1, ..., but the runtime then looks each role up by that "
             "name in the submitted job and every task's init container fails. Refused by `validate` and `compile`.",
             "taskRoles: null",
             "write taskRoles as a mapping of role names to roles"),
    "E802": ("A count FrameworkController cannot hold: more than 10,000 instances in a role, a retry count above "
             "2,147,483,647, a taskRetryCount below -2 in a job with `extras.gangAllocation: false` (it becomes "
             "the task's maxRetryCount), or a completion count below -1.",
             "taskRoles:\n  train:\n    instances: 20000",
             "use a count within FrameworkController's limits"),
    "E803": ("A rendered field (a command, pre/postCommand, registry auth) has a `<%` tag OpenPAI's mustache parser "
             "cannot read (an unclosed tag), so the rest-server would fail to render it.",
             "commands:\n  - python train.py --lr <% $parameters.lr",
             "close the tag (`%>`), or write `<%` some other way"),
    "E804": ("The runtime reads extras.com.microsoft.pai.runtimeplugin as a list of {plugin, parameters} "
             "mappings and runs each plugin with its parameters. OpenPAI's rest-server accepts any value there; the "
             "runtime (the task's init container) then fails: on a list or entry that is no mapping, an entry "
             "without a `plugin` name, or `parameters` that is a number or boolean (the plugins test "
             "`key in parameters`, a TypeError on those).",
             "extras:\n  com.microsoft.pai.runtimeplugin: ssh",
             "write a list of mappings: `- plugin: ssh` with `parameters:` a mapping"),
    "W804": ("A runtime plugin's `parameters` is a string or a list. The plugins test `key in parameters`, which "
             "on a string or list looks for a substring or an item, so the plugin runs without the settings meant "
             "for it (null, false, 0, \"\" and [] are read as no parameters, without a warning).",
             "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: ssh\n      parameters: jobssh",
             "write the settings as a mapping (`parameters: {jobssh: true}`)"),
    "W805": ("extras.hivedScheduler.taskRoles is a number or a boolean. OpenPAI's HiveD schema skips a value that "
             "is not a mapping and its code then finds no task roles in it, so the settings are silently lost; "
             "paictl refuses it instead.",
             "extras:\n  hivedScheduler:\n    taskRoles: 1",
             "write taskRoles as a mapping of task role name to HiveD settings, or remove it"),
    "E806": ("defaults.virtualCluster becomes a Kubernetes label value, which must be 63 characters or fewer of "
             "letters, digits, `-`, `_` and `.`. OpenPAI keeps any value that is not null (an empty string, 0, "
             "false), so the label is empty or not a string: no virtual cluster has such a name (the user check "
             "refuses it) and the API server refuses a label that is not a string. With HiveD, an explicit null "
             "becomes the virtual cluster `null` of the pod's scheduling spec and scheduler name.",
             "defaults:\n  virtualCluster: my cluster",
             "name an existing virtual cluster with a label-safe name"),
    "E808": ("OpenPAI's rest-server crashes (HTTP 500) on storages that are a mapping, a number or true, on a null "
             "entry, on teamwise_storage parameters that are null and on storageConfigNames that are not a list; "
             "Kubernetes refuses a mountPath that is not a string and two volumes of one name (a storage listed "
             "twice).",
             "extras:\n  storages: {name: confignfs}",
             "write `storages: [{name: confignfs}]`, each storage once, with a string mountPath"),
    "W809": ("An unquoted date such as `2020-01-01` stands where the job takes a mapping (completion, "
             "extraContainerOptions, parameters, secrets, defaults, extras, a registry auth, HiveD settings). "
             "OpenPAI's YAML reader makes it a JavaScript Date, which its schema counts as an object without keys, "
             "so the rest-server accepts the job and ignores the value.",
             "taskRoles:\n  train:\n    completion: 2020-01-01",
             "write the mapping the key takes (`completion: {minSucceededInstances: 1}`), or remove the key"),
    "E810": ("OpenPAI renders `<% ... %>` with mustache.js, which looks each dotted name up as JavaScript "
             "properties and calls a function it ends on with the view as `this`. Some names reach a built-in that "
             "throws then (`$parameters.n.toFixed`, `$parameters.s.toString`, `__defineGetter__`), or a mapping "
             "with a `toString` key, which JavaScript cannot print: the rest-server's render fails. A few built-ins "
             "paictl does not model (static methods such as `constructor.keys`, `Date()`) are refused too.",
             "commands:\n  - echo <% $parameters.epochs.toFixed %>",
             "name the parameter itself (`<% $parameters.epochs %>`)"),
    "E811": ("A dockerimage prerequisite that a task role runs has a `uri` that is empty or starts or ends with "
             "blanks. OpenPAI accepts the job and writes the uri into the pod as the container's image, and the "
             "Kubernetes API server refuses a pod whose image is empty or not trimmed, so no task ever starts "
             "(MARO Grass, the local run and the other targets have no image to run either).",
             "prerequisites:\n  - {name: img, type: dockerimage, uri: ''}",
             "write the image reference (`uri: ubuntu:22.04`)"),
    "W812": ("`secrets` is an unquoted date such as `2020-01-01`. OpenPAI's YAML reader makes it a JavaScript "
             "Date, its schema takes that for an empty mapping, and the rest-server then writes the date itself "
             "(`2020-01-01T00:00:00.000Z`) as the job's secrets file. The job runs (the runtime reads the file only "
             "for a registry `auth`, and renders the commands with whatever it holds), but it has no secret to name: "
             "`<% $secrets.x %>` renders empty. paictl compiles the same secrets file.",
             "secrets: 2020-01-01",
             "write the secrets as a mapping (`secrets: {day: '2020-01-01'}`), or remove the key"),
    "E821": ("Grass: a task role's commands use `<% $secrets... %>`; a Grass node has no secret store, so the "
             "value would land in the container's command line and the plan.",
             "commands:\n  - login --token <% $secrets.token %>",
             "read the secret on the node some other way (a file on the shared mount), or use a Kubernetes target"),
    "E822": ("Grass: an `extras.grass` value paictl does not know (a key, an allocation mode or metric, a relative "
             "mount).",
             "extras:\n  grass:\n    allocation: {mode: spread}",
             "use allocation mode single-metric-balanced or single-metric-compacted, metric cpu, memory or gpu"),
    "E823": ("Grass: MARO reserves each container's cpu, memory and gpu on its node; cpu must be above 0 and memory "
             "and gpu not negative (OpenPAI only warns about negative resources, W207).",
             "resourcePerInstance: {cpu: -1, memoryMB: 1024, gpu: 0}",
             "give the resources each container really needs"),
    "E880": ("A marketplace item names a file (description or protocol) that is missing or cannot be read.",
             "protocol: {file: job.yaml}   # no job.yaml beside the item",
             "create the file beside the item, or fix the path"),
    "E881": ("A marketplace item names a file outside its own folder (an absolute path, `..`, or a symlink "
             "pointing out); packing it would publish files the item does not own.",
             "description: {file: ../../etc/passwd}",
             "keep the item's files in its folder"),
    "E882": ("A marketplace item is both public and private; the server keeps one meaning silently.",
             "isPublic: true\nisPrivate: true",
             "set one of them"),
    "W880": ("A marketplace item's groupList is ignored by the server because the item is public or private.",
             "isPublic: true\ngroupList: [team-a]",
             "set isPublic and isPrivate to false to share with groups only, or drop groupList"),
    "W881": ("A marketplace item shared with groups only is never listed for non-admins by the upstream server, "
             "and paictl cannot find it by name to update it.",
             "isPublic: false\nisPrivate: false\ngroupList: [team-a]",
             "make it public if it should be found; otherwise expect a new item on each publish"),
    "E883": ("A marketplace item's tag or category has a comma. The server splits `?tag=` and `?category=` on "
             "commas, so the item can never be found by it; paictl's local index searches the same way.",
             "tags: [\"nlp,english\"]",
             "use two tags, or another separator"),
    "E884": ("A marketplace item holds a NUL (the server's PostgreSQL cannot store it: 500), or a control character "
             "in a name, author, tag, category, group or summary (they are one line of text in listings).",
             "name: \"demo\\u001b]0;title\\u0007\"",
             "remove the character"),
    "W883": ("A marketplace item is larger, as the JSON body publishing sends, than the 100 kB an OpenPAI "
             "marketplace server accepts (express' default): it answers 413. A local index takes it; publishing to "
             "a server refuses it before writing anything.",
             "description: {file: README.md}   # a 150 kB README",
             "shorten the description or the job; link to long documents instead of inlining them"),
    "E901": ("JobSet: a task role or job name cannot become a DNS label within JobSet's 63-character pod-name "
             "budget (empty after conversion, too long, or two roles convert to the same label).",
             "taskRoles:\n  Train_A: ...\n  train-a: ...",
             "shorten or rename the task roles so each converts to a distinct short DNS label"),
    "W901": ("JobSet: tolerated failures (minFailedInstances -1 or above 1) cannot be expressed: a failed instance "
             "fails its role's Job.",
             "completion:\n  minFailedInstances: 2",
             "accept the stricter behaviour, or use the framework target; --strict refuses the job"),
    "W902": ("JobSet: OpenPAI's fallback (every task finished, so the job succeeded) has no JobSet equivalent; it "
             "matters only when a task role tolerates failures (W901).",
             "completion:\n  minSucceededInstances: -1\n  minFailedInstances: -1",
             "set minSucceededInstances on the role that decides success"),
    "W903": ("JobSet: gang allocation needs a cluster add-on (Kueue) and the profile names no queue, so pods start "
             "as they are scheduled.",
             "extras:\n  gangAllocation: true",
             "set `jobset.queueName` in the profile (Kueue), or accept pods starting one by one"),
    "W904": ("JobSet: HiveD scheduling (SKU types, pinned cells, priority) has no JobSet equivalent and is ignored.",
             "extras:\n  hivedScheduler: {...}",
             "use the framework target on a HiveD cluster, or drop hivedScheduler"),
    "E851": ("A search space varies parameters of the job: each of its keys must be one of the job's `parameters`, "
             "or the sweep would change nothing the job reads.",
             "job: parameters: {lr: 0.01}\nspace: {\"learning_rate\": {\"_type\": \"choice\", \"_value\": [0.1]}}",
             "rename the key to the job's parameter (the hint names the closest one), or add the parameter to the job"),
    "W852": ("The parameter exists, but no task role's commands (with their deployment's pre- and post-commands) "
             "use `<% $parameters.NAME %>`: every trial would run the same commands.",
             "parameters: {lr: 0.01}\ncommands: [python train.py]",
             "use `<% $parameters.NAME %>` in the commands, or drop the parameter from the space"),
    "E853": ("A value the space gives a parameter is not of the kind the job's default is (a number, a string, a "
             "boolean, a list or a mapping): a number where the job has a string or a boolean, a string where it "
             "has a number. Integers and reals are one kind, as in JavaScript.",
             "parameters: {optimizer: adam}\nspace: {\"optimizer\": {\"_type\": \"randint\", \"_value\": [1, 3]}}",
             "use choice with values of the default's kind (randint or integer-quantized types for an integer), or "
             "change the job's default"),
    "E854": ("A distribution that cannot be sampled as NNI defines it: randint and uniform need lower < upper, the "
             "log-uniform types a lower bound above 0, the quantized types q > 0, the normal types sigma > 0. Every "
             "value drawn must also be a finite float: high - low, mu +- 10 sigma, exp(mu + 10 sigma) for the "
             "lognormal types (below about 709.78) and a value over q.",
             "{\"lr\": {\"_type\": \"loguniform\", \"_value\": [0, 0.1]}}",
             "fix the bounds as the message says"),
    "E855": ("A grid enumerates every value of every parameter: it can take choice, randint and the bounded "
             "quantized types (quniform, qloguniform), not a continuous or unbounded distribution.",
             "--strategy grid with {\"lr\": {\"_type\": \"loguniform\", \"_value\": [1e-4, 0.1]}}",
             "use --strategy random (with --max-trials), or a quantized type such as qloguniform"),
}
