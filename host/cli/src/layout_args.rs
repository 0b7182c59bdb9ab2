//! The flags that name a snowflake layout: `counter create` stores one,
//! `validate` decodes IDs with one.

use clap::Args;
use idmint::sequence::snowflake::layout::{self, Layout, TimeUnit};
use idmint::sequence::{CounterSpec, SequenceError};

/// A snowflake layout.
#[derive(Debug, Clone, Args)]
pub struct LayoutArgs {
    /// snowflake: bits of time, worker id and sequence, adding up to 63 [default: 41,10,12].
    #[arg(long, value_name = "TIME,WORKER,SEQ")]
    pub layout: Option<String>,
    /// snowflake: the time unit, ms or s [default: ms].
    #[arg(long, value_parser = clap::value_parser!(TimeUnit))]
    pub unit: Option<TimeUnit>,
    /// snowflake: the epoch, a date YYYY-MM-DD (UTC), not in the future [default: 2025-01-01].
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub epoch: Option<String>,
}

impl LayoutArgs {
    /// Whether any of the flags was given.
    pub fn given(&self) -> bool {
        self.layout.is_some() || self.unit.is_some() || self.epoch.is_some()
    }

    /// Puts the flags into `spec` (a bad value is a bad setting, exit 2).
    pub fn apply(&self, spec: &mut CounterSpec) -> anyhow::Result<()> {
        let bad = |reason| idmint::Error::from(SequenceError::InvalidSpec(reason));
        spec.unit = self.unit;
        if let Some(bits) = &self.layout {
            spec.layout = Some(Layout::parse_bits(bits).map_err(bad)?);
        }
        if let Some(epoch) = &self.epoch {
            spec.epoch_ms = Some(layout::parse_date(epoch).map_err(bad)?);
        }
        Ok(())
    }

    /// The layout the flags name, defaults filled in, checked for shape.
    pub fn layout(&self) -> anyhow::Result<Layout> {
        let mut spec = CounterSpec::of(idmint::sequence::CounterKind::Snowflake);
        self.apply(&mut spec)?;
        let layout = spec.snowflake_layout();
        layout
            .check_shape()
            .map_err(|reason| idmint::Error::from(SequenceError::InvalidSpec(reason)))?;
        Ok(layout)
    }
}
