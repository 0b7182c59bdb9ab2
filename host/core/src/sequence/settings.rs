//! The settings of a new counter, as `counter create` takes them: every
//! setting any kind takes, each optional. A kind reads those it takes
//! ([`Kind::SETTINGS`](super::kind_trait::Kind::SETTINGS)); the registry refuses
//! the others, naming the kinds they apply to.

use crate::parts::{PeriodUnit, TimeUnit};

/// Settings of a new counter (see the module docs). Defaults are the kind's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// Cyclic: the largest value before wrapping to 0. Default: 99.
    pub maxval: Option<u64>,
    /// Autoinc and segment: the first value handed out. Default: 1.
    pub start: Option<u64>,
    /// Segment: the smallest segment a process takes. Default: 1000.
    pub step: Option<u64>,
    /// Snowflake: the bits of time, worker id and sequence. Default: 41,10,12.
    pub layout: Option<(u32, u32, u32)>,
    /// Snowflake: the time unit. Default: milliseconds.
    pub unit: Option<TimeUnit>,
    /// Snowflake: the epoch, ms since 1970. Default: 2025-01-01.
    pub epoch_ms: Option<u64>,
    /// Periodic: how long a period lasts. Default: a year.
    pub period: Option<PeriodUnit>,
    /// Periodic: the IANA time zone periods are counted in. Default: UTC.
    pub zone: Option<String>,
}

impl Settings {
    /// The settings given, in a fixed order.
    pub fn given(&self) -> Vec<Setting> {
        [
            (Setting::Maxval, self.maxval.is_some()),
            (Setting::Start, self.start.is_some()),
            (Setting::Step, self.step.is_some()),
            (Setting::Layout, self.layout.is_some()),
            (Setting::Unit, self.unit.is_some()),
            (Setting::Epoch, self.epoch_ms.is_some()),
            (Setting::Period, self.period.is_some()),
            (Setting::Zone, self.zone.is_some()),
        ]
        .into_iter()
        .filter_map(|(setting, given)| given.then_some(setting))
        .collect()
    }
}

/// A setting of `counter create`; each kind takes some ([`Kind::SETTINGS`](super::kind_trait::Kind::SETTINGS)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `--max`: a cyclic counter's largest value.
    Maxval,
    /// `--start`: the first value.
    Start,
    /// `--step`: the smallest segment.
    Step,
    /// `--layout`: snowflake bits.
    Layout,
    /// `--unit`: snowflake time unit.
    Unit,
    /// `--epoch`: snowflake epoch.
    Epoch,
    /// `--period`: day, month or year.
    Period,
    /// `--zone`: the time zone periods are counted in.
    Zone,
}

impl Setting {
    /// The setting's name in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Maxval => "maxval",
            Self::Start => "start",
            Self::Step => "step",
            Self::Layout => "layout",
            Self::Unit => "unit",
            Self::Epoch => "epoch",
            Self::Period => "period",
            Self::Zone => "zone",
        }
    }
}
