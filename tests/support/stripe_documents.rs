//! Documents of striped counters as a test seeds them, field by field as
//! the host writes them: the map of each kind (autoinc, cyclic, periodic,
//! snowflake) and its lanes, and any of them with one field changed or
//! gone, for tests that hold readers and takes equal on well-formed and
//! malformed documents alike.

use mongodb::bson::{doc, Bson, DateTime, Document};

/// 2^53 - 1: the largest integer the stored twins hold exactly, near
/// which cases run a counter out.
pub const MAX: i64 = (1 << 53) - 1;

/// A counter's incarnation (issue 49), and another counter's of its name.
pub const MINE: &str = "0123456789abcdef0123456789abcdef";
pub const OTHER: &str = "fedcba9876543210fedcba9876543210";

/// The map of generation `generation`: `modulus` lanes above `base`,
/// every lane live, or none (a change of stripes under way).
pub fn map(generation: i64, base: i64, modulus: i64, live: bool) -> Document {
    let lanes: Vec<Document> = if live {
        (0..modulus)
            .map(|residue| doc! { "residue": residue })
            .collect()
    } else {
        Vec::new()
    };
    doc! {
        "kind": "striped", "seq": base, "prefixes": [],
        "striped": {
            "kind": "autoinc", "generation": generation, "base": base,
            "modulus": modulus, "lanes": lanes,
        },
    }
}

/// Lane `residue` of a generation of `modulus` lanes above `base`, with
/// local value `seq` (its `last` the value that stands for), sealed or
/// live.
pub fn lane(
    generation: i64,
    base: i64,
    modulus: i64,
    residue: i64,
    seq: i64,
    sealed: bool,
) -> Document {
    let last = if seq == 0 {
        base
    } else {
        base + (seq - 1) * modulus + residue + 1
    };
    let sealed = if sealed {
        Bson::Document(doc! { "at": DateTime::from_millis(0), "claim": generation + 1 })
    } else {
        Bson::Null
    };
    doc! {
        "kind": "lane",
        "lane": { "kind": "autoinc", "generation": generation, "b": base, "m": modulus, "r": residue },
        "seq": seq, "last": last, "sealed": sealed, "prefixes": [],
    }
}

/// `document` with `key` set to `value`.
pub fn with(mut document: Document, key: &str, value: impl Into<Bson>) -> Document {
    document.insert(key, value.into());
    document
}

/// `document` without `key`.
pub fn without(mut document: Document, key: &str) -> Document {
    document.remove(key);
    document
}

/// The map of a cyclic counter of cycle `0..=top`, generation
/// `generation`: `modulus` lanes whose timestamps start above `base`,
/// every lane live, or none. It keeps the counter's own fields, as the
/// host writes them (`val`, `maxval`, `ts`).
pub fn cyclic_map(generation: i64, base: i64, modulus: i64, top: i64, live: bool) -> Document {
    let mut document = map(generation, base, modulus, live);
    document.remove("seq");
    let striped = document.get_document_mut("striped").unwrap();
    striped.insert("kind", "cyclic");
    document.insert("val", 0_i64);
    document.insert("maxval", top);
    document.insert("ts", base);
    document
}

/// Cyclic lane `residue` of a generation of `modulus` lanes above `base`
/// over the cycle `0..=top`, with local value `val` and timestamp `ts`
/// (its `maxval` and `last` what they stand for), sealed or live.
#[allow(clippy::too_many_arguments)]
pub fn cyclic_lane(
    generation: i64,
    base: i64,
    modulus: i64,
    top: i64,
    residue: i64,
    val: i64,
    ts: i64,
    sealed: bool,
) -> Document {
    let sealed = if sealed {
        Bson::Document(doc! { "at": DateTime::from_millis(0), "claim": generation + 1 })
    } else {
        Bson::Null
    };
    doc! {
        "kind": "lane",
        "lane": { "kind": "cyclic", "generation": generation, "b": base, "m": modulus, "r": residue, "top": top },
        "val": val, "maxval": (top - residue) / modulus, "ts": ts, "last": residue + val * modulus,
        "sealed": sealed, "prefixes": [],
    }
}

/// A new cyclic lane, as the host makes one: at the end of its cycle, at
/// its floor `base`.
pub fn fresh_cyclic_lane(
    generation: i64,
    base: i64,
    modulus: i64,
    top: i64,
    residue: i64,
) -> Document {
    let maxval = (top - residue) / modulus;
    cyclic_lane(generation, base, modulus, top, residue, maxval, base, false)
}

/// The map of a periodic counter of years in UTC, generation
/// `generation`: `modulus` lanes above `base` in `base_period` ("": no
/// period yet), every lane live, or none. It keeps the counter's own
/// fields, as the host writes them (`period`, `zone`, `current`, `seq`).
pub fn periodic_map(
    generation: i64,
    base: i64,
    base_period: &str,
    modulus: i64,
    live: bool,
) -> Document {
    let mut document = map(generation, base, modulus, live);
    document.remove("seq");
    let striped = document.get_document_mut("striped").unwrap();
    striped.insert("kind", "periodic");
    if !base_period.is_empty() {
        striped.insert("base_period", base_period);
    }
    document.insert("period", "year");
    document.insert("zone", "UTC");
    document.insert("current", base_period);
    document.insert("seq", base);
    document
}

/// Periodic lane `residue` (of years in UTC) of a generation of `modulus`
/// lanes above `base` in `base_period`, in period `current` with local
/// value `seq` (its `last` the value that stands for: above `base` in the
/// base period, above 0 in a later one), sealed or live.
#[allow(clippy::too_many_arguments)]
pub fn periodic_lane(
    generation: i64,
    base: i64,
    modulus: i64,
    residue: i64,
    base_period: &str,
    current: &str,
    seq: i64,
    sealed: bool,
) -> Document {
    let floor = if current == base_period { base } else { 0 };
    let last = if seq == 0 {
        floor
    } else {
        floor + (seq - 1) * modulus + residue + 1
    };
    let sealed = if sealed {
        Bson::Document(doc! { "at": DateTime::from_millis(0), "claim": generation + 1 })
    } else {
        Bson::Null
    };
    doc! {
        "kind": "lane",
        "lane": {
            "kind": "periodic", "generation": generation, "b": base, "m": modulus, "r": residue,
            "period": "year", "zone": "UTC", "base_period": base_period,
        },
        "current": current, "seq": seq, "last": last, "sealed": sealed, "prefixes": [],
    }
}

/// `document` (a periodic map or lane) counting periods of `unit` in
/// `zone`.
pub fn periods_of(document: Document, unit: &str, zone: &str) -> Document {
    if document.contains_key("lane") {
        with_place(with_place(document, "period", unit), "zone", zone)
    } else {
        with(with(document, "period", unit), "zone", zone)
    }
}

/// The map of a striped snowflake counter of one lane, its own fields as
/// the host writes them, with `fields` set.
pub fn snowflake_map(fields: Document) -> Document {
    let mut document = map(1, 0, 1, true);
    document.remove("seq");
    document
        .get_document_mut("striped")
        .unwrap()
        .insert("kind", "snowflake");
    document.extend(doc! {
        "time_bits": 41_i64, "worker_bits": 10_i64, "seq_bits": 12_i64, "unit": "ms",
        "epoch_ms": 1_288_834_974_657_i64,
    });
    document.extend(fields);
    document
}

/// `lane` without its `lane.KEY`.
pub fn without_place(mut lane: Document, key: &str) -> Document {
    lane.get_document_mut("lane").unwrap().remove(key);
    lane
}

/// `lane` with its `lane.KEY` set to `value`.
pub fn with_place(mut lane: Document, key: &str, value: impl Into<Bson>) -> Document {
    lane.get_document_mut("lane")
        .unwrap()
        .insert(key, value.into());
    lane
}
