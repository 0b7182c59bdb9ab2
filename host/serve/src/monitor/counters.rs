//! The counters on the page: one row per counter, the reasons an operator
//! should look at it ([`Attention`]), and the choice of the counters to
//! look at first among all of them ([`Triage`]), so that the default page
//! stays small whatever the number of counters.

use std::collections::{BTreeMap, BTreeSet};

use idmint::sequence::prefixes::Collision;
use idmint::sequence::striping::LaneReport;
use idmint::sequence::{Headroom, Listed};
use serde::Serialize;

/// The most counters shown for each reason to look at them; the others
/// are counted.
pub const SHOWN_PER_REASON: usize = 50;

/// How many of the busiest counters are shown.
pub const BUSIEST: usize = 10;

/// A reason to look at a counter, the most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Attention {
    /// Its document cannot be read as a counter.
    Malformed,
    /// Another counter owns one of its prefixes: their formatted IDs can
    /// collide.
    SharedPrefix,
    /// [`Headroom::WARN_AT`] or more of what it can hand out is used.
    NearEnd,
    /// Its document declares no `prefixes`: it owns its prefix undeclared,
    /// and the unique index does not keep other counters from it.
    UndeclaredPrefixes,
    /// Among the counters this instance handed out the most values from
    /// over the last minute.
    Busy,
}

impl Attention {
    /// Every reason, the most urgent first.
    pub const ALL: [Attention; 5] = [
        Attention::Malformed,
        Attention::SharedPrefix,
        Attention::NearEnd,
        Attention::UndeclaredPrefixes,
        Attention::Busy,
    ];

    /// The reason in words, after a number of counters or alone.
    pub fn words(self) -> &'static str {
        match self {
            Attention::Malformed => "malformed",
            Attention::SharedPrefix => "with a prefix owned twice",
            Attention::NearEnd => "near the end",
            Attention::UndeclaredPrefixes => "with undeclared prefixes",
            Attention::Busy => "busy here",
        }
    }
}

/// One counter.
#[derive(Debug, Clone, Serialize)]
pub struct CounterRow {
    /// Its name.
    pub name: String,
    /// Its kind (empty when the document cannot be read).
    pub kind: String,
    /// What it says about itself, label and text, in order.
    pub facts: Vec<(String, String)>,
    /// The prefixes it owns, the default first (`(none)`: the empty prefix).
    pub prefixes: Vec<String>,
    /// Whether its document declares them (`prefixes`).
    pub prefixes_declared: bool,
    /// How much is used; `None`: it never runs out.
    pub headroom: Option<Headroom>,
    /// What is wrong with its document, if anything.
    pub problem: Option<String>,
    /// The prefixes it owns that other counters own too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collisions: Vec<Collision>,
    /// Values this instance handed out from it over the last minute.
    pub recent_values: u64,
    /// Why an operator should look at it, the most urgent first (empty:
    /// no reason).
    pub attention: Vec<Attention>,
}

impl CounterRow {
    /// The row of counter `listed` at `now_ms`, with the `collisions` of
    /// every counter (those of others are left out) and its `recent_values`;
    /// marked [`Attention::Busy`] if `busy`.
    pub fn new(
        listed: &Listed,
        now_ms: u64,
        collisions: &[Collision],
        recent_values: u64,
        busy: bool,
    ) -> Self {
        let collisions: Vec<Collision> = collisions
            .iter()
            .filter(|collision| collision.counters.contains(&listed.name))
            .cloned()
            .collect();
        let headroom = listed
            .state
            .as_ref()
            .ok()
            .and_then(|state| state.headroom(now_ms));
        let attention = reasons(listed, headroom.as_ref(), !collisions.is_empty(), busy);
        match &listed.state {
            Ok(state) => CounterRow {
                name: listed.name.clone(),
                kind: state.kind().as_str().to_string(),
                facts: state
                    .facts(now_ms)
                    .into_iter()
                    .map(|fact| (fact.label.to_string(), fact.text))
                    .collect(),
                prefixes: state
                    .prefixes
                    .iter()
                    .map(|prefix| {
                        if prefix.is_empty() {
                            "(none)".to_string()
                        } else {
                            prefix.clone()
                        }
                    })
                    .collect(),
                prefixes_declared: state.prefixes_declared,
                headroom,
                problem: None,
                collisions,
                recent_values,
                attention,
            },
            Err(problem) => CounterRow {
                name: listed.name.clone(),
                kind: String::new(),
                facts: Vec::new(),
                prefixes: Vec::new(),
                prefixes_declared: true,
                headroom: None,
                problem: Some(problem.clone()),
                collisions,
                recent_values,
                attention,
            },
        }
    }

    /// Adds what each lane of a striped counter has handed out to its
    /// facts, as `counter show` says it (`lane 0`, `lane 1`, ...).
    pub fn add_lanes(&mut self, lanes: &[LaneReport]) {
        self.facts
            .extend(lanes.iter().map(|lane| (lane.label(), lane.describe())));
    }

    /// Whether it is near its end ([`Headroom::near_end`]).
    pub fn near_end(&self) -> bool {
        self.headroom.as_ref().is_some_and(Headroom::near_end)
    }
}

/// Why an operator should look at counter `listed`, whose `headroom` is
/// given, which owns a prefix another counter owns if `shared`, and is
/// among the busiest if `busy`: the most urgent reason first.
fn reasons(
    listed: &Listed,
    headroom: Option<&Headroom>,
    shared: bool,
    busy: bool,
) -> Vec<Attention> {
    Attention::ALL
        .into_iter()
        .filter(|reason| match reason {
            Attention::Malformed => listed.state.is_err(),
            Attention::SharedPrefix => shared,
            Attention::NearEnd => headroom.is_some_and(Headroom::near_end),
            Attention::UndeclaredPrefixes => listed
                .state
                .as_ref()
                .is_ok_and(|state| !state.prefixes_declared),
            Attention::Busy => busy,
        })
        .collect()
}

/// How many counters there are for each reason to look at them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AttentionCounts {
    /// Malformed counters.
    pub malformed: u64,
    /// Counters that own a prefix another counter owns too.
    pub shared_prefix: u64,
    /// Counters near their end.
    pub near_end: u64,
    /// Counters whose documents declare no prefixes.
    pub undeclared_prefixes: u64,
    /// The busiest counters (at most [`BUSIEST`]).
    pub busy: u64,
}

impl AttentionCounts {
    fn count(&mut self, reason: Attention) {
        *match reason {
            Attention::Malformed => &mut self.malformed,
            Attention::SharedPrefix => &mut self.shared_prefix,
            Attention::NearEnd => &mut self.near_end,
            Attention::UndeclaredPrefixes => &mut self.undeclared_prefixes,
            Attention::Busy => &mut self.busy,
        } += 1;
    }

    /// How many counters there are for `reason`.
    pub fn of(&self, reason: Attention) -> u64 {
        match reason {
            Attention::Malformed => self.malformed,
            Attention::SharedPrefix => self.shared_prefix,
            Attention::NearEnd => self.near_end,
            Attention::UndeclaredPrefixes => self.undeclared_prefixes,
            Attention::Busy => self.busy,
        }
    }
}

/// The counters to look at first among all of them.
#[derive(Debug, Clone, Default)]
pub struct Triage {
    /// Every counter.
    pub total: u64,
    /// The ones to look at first, by their most urgent reason, at most
    /// [`SHOWN_PER_REASON`] for each (the most used first for counters near
    /// their end, the busiest first for busy ones, else by name); then,
    /// when there are few counters, every other one by name.
    pub rows: Vec<CounterRow>,
    /// How many counters there are for each reason.
    pub counts: AttentionCounts,
}

impl Triage {
    /// Chooses among every counter, `listed` by name, at `now_ms`, given
    /// the prefixes owned twice and the `busiest` counters here with their
    /// values over the last minute. When there are `small` counters or
    /// fewer, every one is shown. Only the rows shown are made.
    pub fn choose(
        listed: &[Listed],
        now_ms: u64,
        collisions: &[Collision],
        busiest: &[(String, u64)],
        small: usize,
    ) -> Self {
        let busy: BTreeMap<&str, u64> = busiest
            .iter()
            .map(|(name, values)| (name.as_str(), *values))
            .collect();
        let shared: BTreeSet<&str> = collisions
            .iter()
            .flat_map(|collision| collision.counters.iter().map(String::as_str))
            .collect();
        let mut counts = AttentionCounts::default();
        // Per most urgent reason, the counters (by index) and the order
        // they are shown in among them.
        let mut by_reason: BTreeMap<Attention, Vec<(usize, f64)>> = BTreeMap::new();
        let mut rest = Vec::new();
        for (index, counter) in listed.iter().enumerate() {
            let headroom = counter
                .state
                .as_ref()
                .ok()
                .and_then(|state| state.headroom(now_ms));
            let recent = busy.get(counter.name.as_str()).copied();
            let reasons = reasons(
                counter,
                headroom.as_ref(),
                shared.contains(counter.name.as_str()),
                recent.is_some(),
            );
            reasons.iter().for_each(|&reason| counts.count(reason));
            let Some(&first) = reasons.first() else {
                if listed.len() <= small {
                    rest.push(index);
                }
                continue;
            };
            let order = match first {
                Attention::NearEnd => -headroom.map_or(0.0, |headroom| headroom.used),
                Attention::Busy => -(recent.unwrap_or(0) as f64),
                _ => 0.0,
            };
            by_reason.entry(first).or_default().push((index, order));
        }
        let row = |index: usize| {
            let counter = &listed[index];
            let recent = busy.get(counter.name.as_str()).copied();
            CounterRow::new(
                counter,
                now_ms,
                collisions,
                recent.unwrap_or(0),
                recent.is_some(),
            )
        };
        let mut rows = Vec::new();
        for (_, mut chosen) in by_reason {
            // Stable: ties stay by name.
            chosen.sort_by(|a, b| a.1.total_cmp(&b.1));
            rows.extend(
                chosen
                    .into_iter()
                    .take(SHOWN_PER_REASON)
                    .map(|(index, _)| row(index)),
            );
        }
        rows.extend(rest.into_iter().map(row));
        Triage {
            total: listed.len() as u64,
            rows,
            counts,
        }
    }

    /// The counters not shown.
    pub fn more(&self) -> u64 {
        self.total - self.rows.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idmint::sequence::{CounterName, CounterState, MAX_VALUE};
    use mongodb::bson::{doc, Document};

    fn listed(name: &str, document: Document) -> Listed {
        let state = CounterState::from_document(&CounterName::new(name).unwrap(), &document)
            .map_err(|error| error.to_string());
        Listed {
            name: name.to_string(),
            state,
        }
    }

    /// An autoinc counter that has handed out `seq` values, owning `P<name>`.
    fn autoinc(name: &str, seq: u64) -> Listed {
        let prefix = format!("P{name}");
        listed(
            name,
            doc! { "kind": "autoinc", "seq": seq as i64, "prefix": &prefix, "prefixes": [&prefix] },
        )
    }

    #[test]
    fn the_counters_to_look_at_first_come_by_reason_and_at_most_so_many_for_each() {
        let mut counters = vec![listed("broken", doc! { "kind": "autoinc", "seq": "x" })];
        counters.extend(
            (0..SHOWN_PER_REASON + 10)
                .map(|i| listed(&format!("legacy-{i:03}"), doc! { "val": 0, "maxval": 9 })),
        );
        counters.push(autoinc("nearly", MAX_VALUE - MAX_VALUE / 20));
        counters.push(autoinc("nearest", MAX_VALUE - 3));
        counters.extend((0..100).map(|i| autoinc(&format!("plain-{i:03}"), i)));
        let busiest = [("plain-007".to_string(), 42)];
        let triage = Triage::choose(&counters, 0, &[], &busiest, 50);

        let names: Vec<&str> = triage.rows.iter().map(|row| row.name.as_str()).collect();
        assert_eq!(names[..3], ["broken", "nearest", "nearly"]);
        // Every legacy document owns the empty prefix undeclared: shown
        // up to the limit, by name.
        assert_eq!(names[3], "legacy-000");
        assert_eq!(names[3 + SHOWN_PER_REASON - 1], "legacy-049");
        assert_eq!(names[3 + SHOWN_PER_REASON..], ["plain-007"]);
        assert_eq!(triage.rows.last().unwrap().recent_values, 42);
        assert_eq!(
            triage.counts,
            AttentionCounts {
                malformed: 1,
                shared_prefix: 0,
                near_end: 2,
                undeclared_prefixes: SHOWN_PER_REASON as u64 + 10,
                busy: 1,
            }
        );
        assert_eq!(triage.total, counters.len() as u64);
        assert_eq!(triage.more(), counters.len() as u64 - names.len() as u64);

        // A few counters: every one is shown, the ones to look at first
        // first.
        let few = [
            autoinc("a", 1),
            autoinc("b", MAX_VALUE - 1),
            autoinc("c", 1),
        ];
        let triage = Triage::choose(&few, 0, &[], &[], 50);
        let names: Vec<&str> = triage.rows.iter().map(|row| row.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "c"]);
        assert_eq!(triage.more(), 0);
    }
}
