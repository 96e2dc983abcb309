//! Priority admission for pods: which priority and preemption policy a new
//! pod gets from its PriorityClass, as kube-apiserver's built-in `Priority`
//! admission plugin decides it (`plugin/pkg/admission/priority`).
//!
//! - CREATE: a named class gives its value and preemption policy; no class
//!   means the globalDefault class (lowest value wins if several claim it),
//!   whose name is written back; no default means priority 0 and
//!   `PreemptLowerPriority`. The two system classes resolve in any
//!   namespace even when the view lacks them (the API server creates them
//!   at start-up, so a real cluster always has them).
//! - A pod that already carries a *different* priority or preemption policy
//!   is refused; an equal one is fine, so re-invocation is idempotent.
//! - UPDATE: no resolution; fields the new object dropped are copied from
//!   the old one (pod validation forbids changing them anyway).
//!
//! PodGroups (`scheduling.k8s.io`, 1.37) are resolved the same way on
//! CREATE only (`admitPodGroup`): their spec has the same three fields, a
//! mismatching priority is refused in its own words, and the preemption
//! policy is resolved only where kube-apiserver's `PodGroupPreemptionPolicy`
//! gate is on ([`Subject::PodGroup`]).

use std::fmt;

use crate::cluster::Snapshot;
use crate::model::PriorityClass;

/// Highest value a user-defined PriorityClass may have.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;
/// Base of the system classes: twice the highest user value.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2 * HIGHEST_USER_DEFINABLE_PRIORITY;
/// A pod without class gets this when no class is globalDefault.
pub const PRIORITY_WITHOUT_DEFAULT_CLASS: i32 = 0;
/// Names starting with this are reserved for [`SYSTEM_CLASSES`].
pub const SYSTEM_CLASS_PREFIX: &str = "system-";

/// A built-in PriorityClass that kube-apiserver creates at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemClass {
    pub name: &'static str,
    pub value: i32,
}

pub const SYSTEM_CLASSES: [SystemClass; 2] = [
    SystemClass {
        name: "system-node-critical",
        value: SYSTEM_CRITICAL_PRIORITY + 1000,
    },
    SystemClass {
        name: "system-cluster-critical",
        value: SYSTEM_CRITICAL_PRIORITY,
    },
];

pub fn system_class(name: &str) -> Option<SystemClass> {
    SYSTEM_CLASSES.iter().copied().find(|c| c.name == name)
}

/// `spec.preemptionPolicy` values the API accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreemptionPolicy {
    PreemptLowerPriority,
    Never,
}

impl PreemptionPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreemptLowerPriority => "PreemptLowerPriority",
            Self::Never => "Never",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "PreemptLowerPriority" => Some(Self::PreemptLowerPriority),
            "Never" => Some(Self::Never),
            _ => None,
        }
    }

    /// A class's policy as the API server stores it: absent is defaulted to
    /// `PreemptLowerPriority` (scheduling/v1 defaulting), so a hand-written
    /// cluster-state file without it behaves like the real cluster.
    /// An unknown value never passes PriorityClass validation; it is kept
    /// as the default rather than guessed.
    fn of_class(class: &PriorityClass) -> Self {
        class
            .preemption_policy
            .as_deref()
            .and_then(Self::parse)
            .unwrap_or(Self::PreemptLowerPriority)
    }
}

impl fmt::Display for PreemptionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The priority-related fields of a pod as submitted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PodPriority<'a> {
    /// `spec.priorityClassName`; empty when absent.
    pub class_name: &'a str,
    pub priority: Option<i32>,
    pub preemption_policy: Option<&'a str>,
}

/// Fields the admitted pod must have that it does not have yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldsToSet {
    pub class_name: Option<String>,
    pub priority: Option<i32>,
    pub preemption_policy: Option<String>,
}

impl FieldsToSet {
    pub fn is_empty(&self) -> bool {
        self.class_name.is_none() && self.priority.is_none() && self.preemption_policy.is_none()
    }
}

/// A pod CREATE that is allowed: what it resolved to and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The class the priority came from; empty when no class applied.
    pub class_name: String,
    pub priority: i32,
    pub preemption_policy: PreemptionPolicy,
    pub set: FieldsToSet,
}

/// Which kind of refusal upstream makes: `apierrors.NewForbidden` (the
/// request is understood but not permitted) or `apierrors.NewInvalid` (the
/// object breaks a validation rule). The admission handler turns it into a
/// Kubernetes status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenialCode {
    Forbidden,
    Invalid,
}

/// A refusal with upstream's wording for the rule that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub code: DenialCode,
    pub reason: String,
}

impl Denial {
    pub fn forbidden(reason: impl Into<String>) -> Self {
        Self {
            code: DenialCode::Forbidden,
            reason: reason.into(),
        }
    }

    pub fn invalid(reason: impl Into<String>) -> Self {
        Self {
            code: DenialCode::Invalid,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// The globalDefault class; when a race left several, the lowest value wins
/// (ties: the first by name, so the answer is stable).
pub fn default_class(snapshot: &Snapshot) -> Option<&PriorityClass> {
    default_among(snapshot.priority_classes())
}

/// [`default_class`] among `classes`, given in name order.
pub fn default_among<'a>(
    classes: impl Iterator<Item = &'a PriorityClass>,
) -> Option<&'a PriorityClass> {
    classes
        .filter(|c| c.global_default)
        .fold(None, |best: Option<&PriorityClass>, c| match best {
            Some(b) if b.value <= c.value => Some(b),
            _ => Some(c),
        })
}

/// Class name, value and policy a pod's `priorityClassName` resolves to;
/// `read` is the API server's copy of a class the view lacks.
fn resolve_class(
    snapshot: &Snapshot,
    class_name: &str,
    read: Option<&PriorityClass>,
) -> Result<(String, i32, PreemptionPolicy), Denial> {
    if class_name.is_empty() {
        return Ok(match default_class(snapshot) {
            Some(c) => (
                c.metadata.name.clone(),
                c.value,
                PreemptionPolicy::of_class(c),
            ),
            None => (
                String::new(),
                PRIORITY_WITHOUT_DEFAULT_CLASS,
                PreemptionPolicy::PreemptLowerPriority,
            ),
        });
    }
    let named = read.filter(|c| c.metadata.name == class_name);
    if let Some(c) = snapshot.priority_class(class_name).or(named) {
        return Ok((
            c.metadata.name.clone(),
            c.value,
            PreemptionPolicy::of_class(c),
        ));
    }
    match system_class(class_name) {
        Some(s) => Ok((
            s.name.to_string(),
            s.value,
            PreemptionPolicy::PreemptLowerPriority,
        )),
        None => Err(Denial::forbidden(format!(
            "no PriorityClass with name {class_name} was found"
        ))),
    }
}

/// The class a pod CREATE names that the view lacks and that is no system
/// class: it may have been created a moment ago, so the API server is
/// asked before the pod is refused for it.
pub fn missing_class<'p>(snapshot: &Snapshot, pod: &PodPriority<'p>) -> Option<&'p str> {
    let name = pod.class_name;
    let missing =
        !name.is_empty() && snapshot.priority_class(name).is_none() && system_class(name).is_none();
    missing.then_some(name)
}

/// Pod CREATE: resolve the class and check what the pod already carries.
pub fn admit_create(snapshot: &Snapshot, pod: &PodPriority<'_>) -> Result<Resolved, Denial> {
    admit_create_confirmed(snapshot, pod, None)
}

/// What a CREATE admits: upstream resolves both from the class alike
/// (`establishPriority`) and differs in the refusals' words and, for
/// PodGroups, in whether the preemption policy is resolved at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// `admitPod`.
    Pod,
    /// `admitPodGroup`; `preemption_policy`: kube-apiserver's
    /// `PodGroupPreemptionPolicy` gate (alpha in 1.37, off by default).
    /// Off, the policy is neither checked nor set.
    PodGroup { preemption_policy: bool },
}

impl Subject {
    /// Upstream's refusal of a priority the object carries that its class
    /// does not give.
    fn priority_mismatch(self, given: i32, computed: i32) -> Denial {
        Denial::forbidden(match self {
            Self::Pod => format!(
                "the integer value of priority ({given}) must not be provided in pod spec; \
                 priority admission controller computed {computed} from the given PriorityClass name"
            ),
            Self::PodGroup { .. } => format!(
                "priority set in the pod group ({given}) must match the priority computed \
                 ({computed}) based on the priority class set in the spec"
            ),
        })
    }

    /// The spec upstream names when refusing a preemption policy.
    fn spec(self) -> &'static str {
        match self {
            Self::Pod => "pod spec",
            Self::PodGroup { .. } => "pod group spec",
        }
    }

    fn resolves_preemption_policy(self) -> bool {
        match self {
            Self::Pod => true,
            Self::PodGroup { preemption_policy } => preemption_policy,
        }
    }
}

/// [`admit_create`], with `read` the API server's copy of the class the
/// pod names and the view lacks ([`missing_class`]); `None` when the API
/// server has none either.
pub fn admit_create_confirmed(
    snapshot: &Snapshot,
    pod: &PodPriority<'_>,
    read: Option<&PriorityClass>,
) -> Result<Resolved, Denial> {
    admit_create_as(Subject::Pod, snapshot, pod, read)
}

/// [`admit_create_confirmed`] for `subject`: a pod, or a PodGroup whose
/// spec carries the same three fields.
pub fn admit_create_as(
    subject: Subject,
    snapshot: &Snapshot,
    submitted: &PodPriority<'_>,
    read: Option<&PriorityClass>,
) -> Result<Resolved, Denial> {
    let (class_name, priority, policy) = resolve_class(snapshot, submitted.class_name, read)?;
    let mut set = FieldsToSet::default();
    match submitted.priority {
        Some(given) if given != priority => {
            return Err(subject.priority_mismatch(given, priority));
        }
        Some(_) => {}
        None => set.priority = Some(priority),
    }
    if subject.resolves_preemption_policy() {
        match submitted.preemption_policy {
            Some(given) if given != policy.as_str() => {
                return Err(Denial::forbidden(format!(
                    "the string value of PreemptionPolicy ({given}) must not be provided in {}; \
                     priority admission controller computed {policy} from the given PriorityClass \
                     name",
                    subject.spec()
                )));
            }
            Some(_) => {}
            None => set.preemption_policy = Some(policy.as_str().to_string()),
        }
    }
    if submitted.class_name != class_name {
        set.class_name = Some(class_name.clone());
    }
    Ok(Resolved {
        class_name,
        priority,
        preemption_policy: policy,
        set,
    })
}

/// Pod UPDATE: keep the priority and preemption policy the pod was created
/// with when the new object dropped them (a client that round-trips an old
/// schema); a changed value is left for pod validation to refuse.
pub fn preserve_on_update(new: &PodPriority<'_>, old: &PodPriority<'_>) -> FieldsToSet {
    FieldsToSet {
        class_name: None,
        priority: new.priority.is_none().then_some(old.priority).flatten(),
        preemption_policy: new
            .preemption_policy
            .is_none()
            .then_some(old.preemption_policy)
            .flatten()
            .map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;

    fn class(name: &str, value: i32, global_default: bool, policy: Option<&str>) -> PriorityClass {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "value": value,
            "globalDefault": global_default,
            "preemptionPolicy": policy,
        }))
        .unwrap()
    }

    fn default1() -> PriorityClass {
        class("default1", 1000, true, None)
    }
    fn default2() -> PriorityClass {
        class("default2", 2000, true, None)
    }
    fn nondefault1() -> PriorityClass {
        class("nondefault1", 2000, false, None)
    }
    fn cluster_critical_in_view() -> PriorityClass {
        class(
            "system-cluster-critical",
            SYSTEM_CRITICAL_PRIORITY,
            true,
            None,
        )
    }
    fn never_default() -> PriorityClass {
        class("nopreemptionpolicy", 2000, true, Some("Never"))
    }
    fn lower_default() -> PriorityClass {
        class(
            "nopreemptionpolicy",
            2000,
            true,
            Some("PreemptLowerPriority"),
        )
    }

    fn view(classes: Vec<PriorityClass>) -> Snapshot {
        Snapshot::build(ClusterObjects {
            priority_classes: classes,
            ..Default::default()
        })
    }

    fn pod(class_name: &str) -> PodPriority<'_> {
        PodPriority {
            class_name,
            ..Default::default()
        }
    }

    struct Case {
        name: &'static str,
        classes: Vec<PriorityClass>,
        pod: PodPriority<'static>,
        want: Result<(i32, &'static str, &'static str), &'static str>,
    }

    /// The situations of upstream's TestPodAdmission, plus the built-in and
    /// write-back rules: (priority, class written, policy) or the denial.
    #[test]
    fn pod_create_resolves_like_the_priority_plugin() {
        let cases = vec![
            Case {
                name: "pod with a named class gets its value",
                classes: vec![default1(), nondefault1()],
                pod: pod("default1"),
                want: Ok((1000, "default1", "PreemptLowerPriority")),
            },
            Case {
                name: "pod without class gets the default class and its name",
                classes: vec![default1()],
                pod: pod(""),
                want: Ok((1000, "default1", "PreemptLowerPriority")),
            },
            Case {
                name: "pod without class and no classes at all gets 0",
                classes: vec![],
                pod: pod(""),
                want: Ok((0, "", "PreemptLowerPriority")),
            },
            Case {
                name: "pod without class and no default class gets 0",
                classes: vec![nondefault1()],
                pod: pod(""),
                want: Ok((0, "", "PreemptLowerPriority")),
            },
            Case {
                name: "several default classes: the lowest value wins",
                classes: vec![default2(), default1()],
                pod: pod(""),
                want: Ok((1000, "default1", "PreemptLowerPriority")),
            },
            Case {
                name: "system class from the view",
                classes: vec![cluster_critical_in_view()],
                pod: pod("system-cluster-critical"),
                want: Ok((
                    SYSTEM_CRITICAL_PRIORITY,
                    "system-cluster-critical",
                    "PreemptLowerPriority",
                )),
            },
            Case {
                name: "system-cluster-critical resolves when the view lacks it",
                classes: vec![],
                pod: pod("system-cluster-critical"),
                want: Ok((
                    2_000_000_000,
                    "system-cluster-critical",
                    "PreemptLowerPriority",
                )),
            },
            Case {
                name: "system-node-critical resolves when the view lacks it",
                classes: vec![default1()],
                pod: pod("system-node-critical"),
                want: Ok((
                    2_000_001_000,
                    "system-node-critical",
                    "PreemptLowerPriority",
                )),
            },
            Case {
                name: "unknown class is forbidden",
                classes: vec![default1(), nondefault1()],
                pod: pod("non-existing"),
                want: Err("no PriorityClass with name non-existing was found"),
            },
            Case {
                name: "a different integer priority is forbidden",
                classes: vec![default1()],
                pod: PodPriority {
                    class_name: "default1",
                    priority: Some(5),
                    preemption_policy: None,
                },
                want: Err(
                    "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name",
                ),
            },
            Case {
                name: "integer priority with an unknown class: the class error comes first",
                classes: vec![],
                pod: PodPriority {
                    class_name: "default1",
                    priority: Some(1000),
                    preemption_policy: None,
                },
                want: Err("no PriorityClass with name default1 was found"),
            },
            Case {
                name: "priority 0 equal to the no-default result is fine",
                classes: vec![nondefault1()],
                pod: PodPriority {
                    class_name: "",
                    priority: Some(0),
                    preemption_policy: None,
                },
                want: Ok((0, "", "PreemptLowerPriority")),
            },
            Case {
                name: "priority equal to the default class value is fine",
                classes: vec![default2()],
                pod: PodPriority {
                    class_name: "",
                    priority: Some(2000),
                    preemption_policy: None,
                },
                want: Ok((2000, "default2", "PreemptLowerPriority")),
            },
            Case {
                name: "a priority different from the default class value is forbidden",
                classes: vec![default2()],
                pod: PodPriority {
                    class_name: "",
                    priority: Some(0),
                    preemption_policy: None,
                },
                want: Err(
                    "the integer value of priority (0) must not be provided in pod spec; priority admission controller computed 2000 from the given PriorityClass name",
                ),
            },
            Case {
                name: "priority equal to the resolved system class is fine",
                classes: vec![cluster_critical_in_view()],
                pod: PodPriority {
                    class_name: "system-cluster-critical",
                    priority: Some(SYSTEM_CRITICAL_PRIORITY),
                    preemption_policy: None,
                },
                want: Ok((
                    SYSTEM_CRITICAL_PRIORITY,
                    "system-cluster-critical",
                    "PreemptLowerPriority",
                )),
            },
            Case {
                name: "no preemption policy on the pod: the class's Never is set",
                classes: vec![never_default()],
                pod: PodPriority {
                    class_name: "nopreemptionpolicy",
                    priority: Some(2000),
                    preemption_policy: None,
                },
                want: Ok((2000, "nopreemptionpolicy", "Never")),
            },
            Case {
                name: "default class with Never gives Never",
                classes: vec![never_default()],
                pod: pod(""),
                want: Ok((2000, "nopreemptionpolicy", "Never")),
            },
            Case {
                name: "a preemption policy equal to the class's is fine",
                classes: vec![lower_default()],
                pod: PodPriority {
                    class_name: "nopreemptionpolicy",
                    priority: Some(2000),
                    preemption_policy: Some("PreemptLowerPriority"),
                },
                want: Ok((2000, "nopreemptionpolicy", "PreemptLowerPriority")),
            },
            Case {
                name: "a different preemption policy is forbidden",
                classes: vec![lower_default()],
                pod: PodPriority {
                    class_name: "nopreemptionpolicy",
                    priority: Some(2000),
                    preemption_policy: Some("Never"),
                },
                want: Err(
                    "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name",
                ),
            },
            Case {
                name: "no default class: a Never policy on the pod conflicts with PreemptLowerPriority",
                classes: vec![],
                pod: PodPriority {
                    class_name: "",
                    priority: None,
                    preemption_policy: Some("Never"),
                },
                want: Err(
                    "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name",
                ),
            },
        ];
        for case in cases {
            let got = admit_create(&view(case.classes), &case.pod);
            match (case.want, got) {
                (Ok((priority, class, policy)), Ok(r)) => {
                    assert_eq!(r.priority, priority, "{}", case.name);
                    assert_eq!(r.class_name, class, "{}", case.name);
                    assert_eq!(r.preemption_policy.as_str(), policy, "{}", case.name);
                }
                (Err(reason), Err(d)) => {
                    assert_eq!(d.reason, reason, "{}", case.name);
                    assert_eq!(d.code, DenialCode::Forbidden, "{}", case.name);
                }
                (want, got) => panic!("{}: want {want:?}, got {got:?}", case.name),
            }
        }
    }

    #[test]
    fn only_missing_fields_are_set() {
        let v = view(vec![default1()]);
        let r = admit_create(&v, &pod("")).unwrap();
        assert_eq!(
            r.set,
            FieldsToSet {
                class_name: Some("default1".into()),
                priority: Some(1000),
                preemption_policy: Some("PreemptLowerPriority".into()),
            }
        );
        let named = admit_create(&v, &pod("default1")).unwrap();
        assert_eq!(named.set.class_name, None);
        assert_eq!(named.set.priority, Some(1000));
    }

    #[test]
    fn reinvocation_on_an_admitted_pod_changes_nothing() {
        let v = view(vec![never_default()]);
        let first = admit_create(&v, &pod("")).unwrap();
        let admitted = PodPriority {
            class_name: "nopreemptionpolicy",
            priority: first.set.priority,
            preemption_policy: first.set.preemption_policy.as_deref(),
        };
        let second = admit_create(&v, &admitted).unwrap();
        assert!(second.set.is_empty(), "{:?}", second.set);
    }

    #[test]
    fn no_default_class_writes_no_class_name() {
        let r = admit_create(&view(vec![]), &pod("")).unwrap();
        assert_eq!(r.set.class_name, None);
        assert_eq!(r.set.priority, Some(0));
    }

    #[test]
    fn a_view_class_overrides_the_builtin_of_the_same_name() {
        // A real cluster always holds the system classes; the view's copy
        // is what the API server would read.
        let v = view(vec![class(
            "system-node-critical",
            SYSTEM_CRITICAL_PRIORITY + 1000,
            false,
            Some("Never"),
        )]);
        let r = admit_create(&v, &pod("system-node-critical")).unwrap();
        assert_eq!(r.preemption_policy, PreemptionPolicy::Never);
    }

    #[test]
    fn a_class_the_view_lacks_is_asked_for_and_its_read_copy_decides() {
        let v = view(vec![default1()]);
        assert_eq!(missing_class(&v, &pod("fresh-class")), Some("fresh-class"));
        for known in ["default1", "system-cluster-critical", ""] {
            assert_eq!(missing_class(&v, &pod(known)), None, "{known:?}");
        }
        let fresh = class("fresh-class", 700, false, Some("Never"));
        let r = admit_create_confirmed(&v, &pod("fresh-class"), Some(&fresh)).unwrap();
        assert_eq!(
            (r.priority, r.preemption_policy),
            (700, PreemptionPolicy::Never)
        );
        let gone = admit_create_confirmed(&v, &pod("fresh-class"), None).unwrap_err();
        assert_eq!(
            gone.reason,
            "no PriorityClass with name fresh-class was found"
        );
        let other = admit_create_confirmed(&v, &pod("other"), Some(&fresh)).unwrap_err();
        assert_eq!(other.reason, "no PriorityClass with name other was found");
    }

    #[test]
    fn default_class_ties_on_value_pick_the_first_name() {
        let v = view(vec![class("b", 5, true, None), class("a", 5, true, None)]);
        assert_eq!(default_class(&v).unwrap().metadata.name, "a");
        assert!(default_class(&view(vec![nondefault1()])).is_none());
    }

    #[test]
    fn update_copies_dropped_fields_from_the_old_pod() {
        let old = PodPriority {
            class_name: "default1",
            priority: Some(1000),
            preemption_policy: Some("Never"),
        };
        let dropped = PodPriority {
            class_name: "default1",
            ..Default::default()
        };
        assert_eq!(
            preserve_on_update(&dropped, &old),
            FieldsToSet {
                class_name: None,
                priority: Some(1000),
                preemption_policy: Some("Never".into()),
            }
        );
        // Present fields are left alone, even when they differ: pod
        // validation refuses that change, not admission.
        let changed = PodPriority {
            priority: Some(7),
            preemption_policy: Some("PreemptLowerPriority"),
            ..dropped
        };
        assert!(preserve_on_update(&changed, &old).is_empty());
        // Nothing to copy from an old pod that had nothing.
        assert!(preserve_on_update(&dropped, &PodPriority::default()).is_empty());
    }

    const GROUP: Subject = Subject::PodGroup {
        preemption_policy: false,
    };
    const GROUP_WITH_POLICY: Subject = Subject::PodGroup {
        preemption_policy: true,
    };

    /// `admitPodGroup` (plugin/pkg/admission/priority/admission.go, 1.37):
    /// the class resolves as for a pod (`establishPriority`), and the
    /// default class or priority 0 applies without one.
    #[test]
    fn pod_group_create_resolves_its_class_like_a_pod() {
        let classes = view(vec![default1(), nondefault1()]);
        let named = admit_create_as(GROUP, &classes, &pod("nondefault1"), None).unwrap();
        assert_eq!(
            (named.priority, named.class_name.as_str()),
            (2000, "nondefault1")
        );
        assert_eq!(named.set.priority, Some(2000));
        assert_eq!(named.set.class_name, None);
        let defaulted = admit_create_as(GROUP, &classes, &pod(""), None).unwrap();
        assert_eq!(defaulted.set.priority, Some(1000));
        assert_eq!(defaulted.set.class_name.as_deref(), Some("default1"));
        let none = admit_create_as(GROUP, &view(vec![]), &pod(""), None).unwrap();
        assert_eq!((none.set.priority, none.set.class_name), (Some(0), None));
        assert_eq!(
            admit_create_as(GROUP, &classes, &pod("non-existing"), None).unwrap_err(),
            Denial::forbidden("no PriorityClass with name non-existing was found")
        );
    }

    /// `admitPodGroup` words its priority refusal its own way; an equal
    /// priority passes.
    #[test]
    fn pod_group_with_a_different_priority_is_refused_in_upstreams_words() {
        let classes = view(vec![default1()]);
        let carrying = |priority| PodPriority {
            class_name: "default1",
            priority: Some(priority),
            preemption_policy: None,
        };
        assert_eq!(
            admit_create_as(GROUP, &classes, &carrying(5), None).unwrap_err(),
            Denial::forbidden(
                "priority set in the pod group (5) must match the priority computed (1000) \
                 based on the priority class set in the spec"
            )
        );
        let equal = admit_create_as(GROUP, &classes, &carrying(1000), None).unwrap();
        assert!(equal.set.is_empty(), "{equal:?}");
    }

    /// The preemption policy is resolved only behind
    /// `PodGroupPreemptionPolicy` (`admitPodGroup`); with the gate off a
    /// policy the group carries is neither checked nor changed.
    #[test]
    fn pod_group_preemption_policy_follows_the_gate() {
        let classes = view(vec![never_default()]);
        let off = admit_create_as(GROUP, &classes, &pod(""), None).unwrap();
        assert_eq!(off.set.preemption_policy, None);
        let on = admit_create_as(GROUP_WITH_POLICY, &classes, &pod(""), None).unwrap();
        assert_eq!(on.set.preemption_policy.as_deref(), Some("Never"));
        let carrying = PodPriority {
            class_name: "",
            priority: None,
            preemption_policy: Some("PreemptLowerPriority"),
        };
        assert!(admit_create_as(GROUP, &classes, &carrying, None).is_ok());
        assert_eq!(
            admit_create_as(GROUP_WITH_POLICY, &classes, &carrying, None).unwrap_err(),
            Denial::forbidden(
                "the string value of PreemptionPolicy (PreemptLowerPriority) must not be \
                 provided in pod group spec; priority admission controller computed Never from \
                 the given PriorityClass name"
            )
        );
    }
}
