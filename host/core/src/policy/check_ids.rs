//! Checking IDs: the one routing `idmint validate` and `POST /v1/validate`
//! share. With a snowflake counter's layout and no prefix asked for, a bare
//! number is a raw snowflake value (what `idmint seq` prints), read by the
//! layout alone; every other ID is read by the policy, which is loaded only
//! if one is.

use super::error::PolicyError;
use super::runtime::Policy;
use crate::parts::{IdParts, Layout};

/// An ID's parts, or why it is not a valid ID.
pub type Verdict = Result<IdParts, String>;

/// One verdict per ID of `ids`, in order (see the module docs). `policy`
/// is called at most once, and only if an ID needs it.
pub fn check_ids<E: From<PolicyError>>(
    ids: &[String],
    prefix: Option<&str>,
    layout: Option<&Layout>,
    policy: impl FnOnce() -> Result<Policy, E>,
) -> Result<Vec<Verdict>, E> {
    let raw_layout = layout.filter(|_| prefix.is_none_or(str::is_empty));
    let raw: Vec<Option<Verdict>> = ids
        .iter()
        .map(|id| raw_layout.and_then(|layout| raw_snowflake(id, layout)))
        .collect();
    let formatted: Vec<String> = ids
        .iter()
        .zip(&raw)
        .filter(|(_, raw)| raw.is_none())
        .map(|(id, _)| id.clone())
        .collect();
    let mut read = if formatted.is_empty() {
        Vec::new()
    } else {
        policy()?.validate_many(&formatted, prefix, layout)?
    }
    .into_iter();
    Ok(raw
        .into_iter()
        .map(|raw| {
            raw.unwrap_or_else(|| match read.next() {
                Some(Ok(parts)) => Ok(parts),
                Some(Err(reason)) => Err(reason.to_string()),
                None => Err("the policy gave no verdict".to_string()),
            })
        })
        .collect())
}

/// `id` read as a raw snowflake value of `layout`, if it is a bare number:
/// its parts as a policy reading it would give them (no prefix, the time the
/// layout puts in it, the whole value as the sequence, its fields), or why it
/// is not one. `None` when `id` is not a bare number.
fn raw_snowflake(id: &str, layout: &Layout) -> Option<Verdict> {
    if id.is_empty() || !id.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let too_large = || format!("not a snowflake value of layout {layout}: more than 63 bits");
    let Ok(value) = id.parse::<u64>() else {
        return Some(Err(too_large()));
    };
    let Some(parts) = layout.decompose(value) else {
        return Some(Err(too_large()));
    };
    let micros = parts
        .time
        .checked_mul(layout.unit.millis())
        .and_then(|ms| ms.checked_add(layout.epoch_ms))
        .and_then(|ms| ms.checked_mul(1000));
    let Some(timestamp_micros) = micros else {
        return Some(Err(format!(
            "not a snowflake value of layout {layout}: its time is past any date"
        )));
    };
    Some(Ok(IdParts {
        prefix: String::new(),
        timestamp_micros,
        sequence: value,
        snowflake: Some(parts),
        period: None,
    }))
}
