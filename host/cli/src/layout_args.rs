//! The flags that name a snowflake layout: `counter create` stores one,
//! `validate` decodes IDs with one.

use clap::Args;
use idmint::parts::snowflake::parse_date;
use idmint::parts::{Layout, TimeUnit};
use idmint::sequence::{layout_of, SequenceError, Setting, Settings};

use super::setting_help::setting_help;

/// A snowflake layout.
#[derive(Debug, Clone, Args)]
pub struct LayoutArgs {
    #[arg(long, value_name = "TIME,WORKER,SEQ", help = setting_help(Setting::Layout, "bits of time, worker id and sequence, adding up to 63 [default: 41,10,12]"))]
    pub layout: Option<String>,
    #[arg(long, value_parser = clap::value_parser!(TimeUnit), help = setting_help(Setting::Unit, "the time unit, ms or s [default: ms]"))]
    pub unit: Option<TimeUnit>,
    #[arg(long, value_name = "YYYY-MM-DD", help = setting_help(Setting::Epoch, "the epoch, a date YYYY-MM-DD (UTC), not in the future [default: 2025-01-01]"))]
    pub epoch: Option<String>,
}

impl LayoutArgs {
    /// Whether any of the flags was given.
    pub fn given(&self) -> bool {
        self.layout.is_some() || self.unit.is_some() || self.epoch.is_some()
    }

    /// Puts the flags into `settings` (a bad value is a bad setting, exit 2).
    pub fn apply(&self, settings: &mut Settings) -> anyhow::Result<()> {
        let bad = |reason| idmint::Error::from(SequenceError::InvalidSpec(reason));
        settings.unit = self.unit;
        if let Some(bits) = &self.layout {
            settings.layout = Some(Layout::parse_bits(bits).map_err(bad)?);
        }
        if let Some(epoch) = &self.epoch {
            settings.epoch_ms = Some(parse_date(epoch).map_err(bad)?);
        }
        Ok(())
    }

    /// The layout the flags name, defaults filled in, checked for shape.
    pub fn layout(&self) -> anyhow::Result<Layout> {
        let mut settings = Settings::default();
        self.apply(&mut settings)?;
        let layout = layout_of(&settings);
        layout
            .check_shape()
            .map_err(|reason| idmint::Error::from(SequenceError::InvalidSpec(reason)))?;
        Ok(layout)
    }
}
