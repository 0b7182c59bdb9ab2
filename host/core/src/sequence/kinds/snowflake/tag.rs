//! A snowflake counter's tag and salt (docs/design/standard-ids.md, "The
//! tag", "The noise"): what a standard ID (UUIDv7, ULID) made from the
//! counter's fields carries besides its time, worker and sequence, so that
//! two counters of one database never make the same ID.
//!
//! - The **tag**, 1 to [`MAX_TAG`], is unique in the database: each is
//!   drawn by one `$inc` of the tags document ([`TAGS_ID`], in `counters`,
//!   an `_id` no counter can take since names start with a letter or digit),
//!   durably (majority, journal), as every write that hands something out,
//!   and then claimed (`tag_claim.rs`: one insert keyed by the tag in the
//!   `tags` collection, which either wins or names the holder). A number
//!   claimed first by a counter spread here from another deployment is drawn
//!   again. A number drawn and then not kept (a lost race, a create that
//!   failed) is skipped, never handed to another counter.
//! - The **salt**, 64 bits from the OS's random source, keys the noise
//!   that makes the rest of a standard ID look random.
//!
//! Both are written into the counter's document when it is created
//! ([`drawn_fields`]); a counter made before idmint knew tags gets them the
//! first time they are needed (`late_tag.rs`: a draw, then a write that
//! keeps the tag already there, so that two processes racing keep the
//! first). The salt is a secret of the counter's IDs: it is stored as 16
//! hex digits and never printed.

use std::fmt;

use mongodb::bson::{doc, Document};
use mongodb::options::ReturnDocument;
use mongodb::Database;
use serde::{Serialize, Serializer};

use super::tag_claim::{self, Claimed, TagClaimant};
use crate::mongo::collections::COUNTERS;
use crate::mongo::durable_write_concern;
use crate::sequence::counter::document::corrupt;
use crate::sequence::counter::fields::{read_integer, read_string};
use crate::sequence::error::SequenceError;
use crate::sequence::identity::Incarnation;
use crate::sequence::name::CounterName;
use crate::sequence::striping::hooks::{self, Point};

/// The `_id` of the document tags are drawn from, in `counters`.
pub const TAGS_ID: &str = "_idmint.tags";
/// Bits of a tag: what a standard ID holds of it.
pub const TAG_BITS: u32 = 24;
/// The largest tag: 16,777,215 snowflake counters per database.
pub const MAX_TAG: u32 = (1 << TAG_BITS) - 1;
/// How many tags one draw takes at most, each claimed already by a counter
/// spread here from another deployment, before it gives up
/// ([`SequenceError::TagsClaimed`]). A spread raises the tags document to
/// its tag before it claims it, so each draw lost is to another spread
/// running at that moment, and the draw after it is past that spread's tag.
const DRAWS: u32 = 8;

/// The document fields of a counter's tag and salt.
pub(super) const TAG_FIELD: &str = "tag";
const SALT_FIELD: &str = "salt";
/// The tags document's field holding the last tag drawn.
const LAST_FIELD: &str = "last";

/// A snowflake counter's tag and salt (see the module docs). Serialized
/// (and debug-printed) without its salt.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CounterTag {
    /// The tag, unique among the database's snowflake counters.
    pub tag: u32,
    /// The salt that keys the noise of the counter's standard IDs.
    pub salt: u64,
}

impl fmt::Debug for CounterTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CounterTag")
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

impl Serialize for CounterTag {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.tag)
    }
}

impl CounterTag {
    /// The tag and salt of a counter document: `None` when it has neither
    /// (a counter made before idmint knew tags); one without the other, or
    /// either malformed, is what is wrong with the document.
    pub(crate) fn read(document: &Document) -> Result<Option<Self>, String> {
        match (document.get(TAG_FIELD), document.get(SALT_FIELD)) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(format!("{TAG_FIELD} is set but {SALT_FIELD} is missing")),
            (None, Some(_)) => Err(format!("{SALT_FIELD} is set but {TAG_FIELD} is missing")),
            (Some(_), Some(_)) => {
                let tag = read_integer(document, TAG_FIELD, 1, u64::from(MAX_TAG))? as u32;
                let text = read_string(document, SALT_FIELD)?;
                let salt = (text.len() == 16)
                    .then(|| u64::from_str_radix(text, 16).ok())
                    .flatten()
                    .ok_or_else(|| format!("{SALT_FIELD} is not 16 hex digits"))?;
                Ok(Some(CounterTag { tag, salt }))
            }
        }
    }

    /// The fields that store this tag and salt in a counter document.
    pub(crate) fn fields(&self) -> Document {
        doc! {
            TAG_FIELD: i64::from(self.tag),
            SALT_FIELD: format!("{:016x}", self.salt),
        }
    }
}

/// Draws a new tag and salt for counter `name` of `incarnation` (none: a
/// counter made before incarnations): the next tag of `database`, durably,
/// claimed for the counter (`tag_claim.rs`), and 64 random bits. A tag
/// claimed first by another counter (spread here from another deployment)
/// is skipped and another drawn, `DRAWS` at most
/// ([`SequenceError::TagsClaimed`]); past [`MAX_TAG`] it is
/// [`SequenceError::TagsExhausted`]. Nothing is written to the counter
/// (`late_tag.rs` does, for a counter made before tags).
pub async fn draw_tag(
    database: &Database,
    name: &CounterName,
    incarnation: Option<&Incarnation>,
) -> Result<CounterTag, SequenceError> {
    let mut last = 0;
    for _ in 0..DRAWS {
        last = next_tag(database, name).await?;
        hooks::pass(database.name(), name.as_str(), Point::AfterTagDrawn).await;
        let claimant = TagClaimant::drawing(incarnation);
        if tag_claim::claim(database, name, last, claimant).await? == Claimed::Its {
            return Ok(CounterTag {
                tag: last,
                salt: crate::random::random_u64(),
            });
        }
    }
    Err(SequenceError::TagsClaimed {
        name: name.clone(),
        attempts: DRAWS,
        last,
    })
}

/// The next tag of `database`'s tags document, drawn durably for counter
/// `name` (named in errors only), or [`SequenceError::TagsExhausted`].
async fn next_tag(database: &Database, name: &CounterName) -> Result<u32, SequenceError> {
    let tags = database
        .collection::<Document>(COUNTERS)
        .find_one_and_update(
            doc! { "_id": TAGS_ID },
            // `prefixes: []`: the tags document owns no prefix, so the
            // prefix checks, which read every document of `counters`, never
            // take it for the owner of the empty one.
            doc! { "$inc": { LAST_FIELD: 1_i64 }, "$setOnInsert": { "prefixes": [] } },
        )
        .upsert(true)
        .return_document(ReturnDocument::After)
        .write_concern(durable_write_concern())
        .await
        .map_err(|source| SequenceError::from_database(name, "draw a tag for", "update", source))?
        .ok_or_else(|| corrupt(name, format!("the upsert of {TAGS_ID} returned nothing")))?;
    let last = read_integer(&tags, LAST_FIELD, 1, u64::MAX)
        .map_err(|reason| corrupt(name, format!("{TAGS_ID}: {reason}")))?;
    if last > u64::from(MAX_TAG) {
        return Err(SequenceError::TagsExhausted {
            name: name.clone(),
            limit: MAX_TAG,
        });
    }
    Ok(last as u32)
}

/// Keeps tag `tag` of counter `name` (`incarnation`) from every other
/// counter of `database` (a deployment the counter spans, whose tags
/// document did not draw it): the tags document's last tag is raised to it
/// at least, so that no draw there hands it out from now on, durably; then
/// a counter of `database` made before tag claims that has it is looked
/// for; then the tag is claimed (`tag_claim.rs`), which wins unless another
/// counter claimed it first (a create there that drew it before the raise).
/// The name of the counter that has it, if there is one: the two counters'
/// standard IDs could meet. A claim of the counter's name without
/// incarnation is its own where `unmarked_are_its_own` (`database` holds
/// its document or a copy of its map).
pub async fn keep_tag_from_others(
    database: &Database,
    name: &CounterName,
    incarnation: Option<&Incarnation>,
    unmarked_are_its_own: bool,
    tag: u32,
) -> Result<Option<String>, SequenceError> {
    let counters = database.collection::<Document>(COUNTERS);
    counters
        .update_one(
            doc! { "_id": TAGS_ID },
            vec![doc! { "$set": {
                LAST_FIELD: { "$max": [{ "$ifNull": [format!("${LAST_FIELD}"), 0_i64] }, i64::from(tag)] },
                "prefixes": { "$ifNull": ["$prefixes", []] },
            }}],
        )
        .upsert(true)
        .write_concern(durable_write_concern())
        .await
        .map_err(|source| SequenceError::from_database(name, "keep the tag of", "update", source))?;
    // A counter made before tag claims has its tag in its document alone.
    // Every counter made since claims its tag before its document has it,
    // so this look-up, before the claim, misses none the claim would not
    // catch, and a refusal here leaves no claim behind.
    let owner = counters
        .find_one(doc! {
            TAG_FIELD: i64::from(tag),
            "_id": { "$nin": [name.as_str(), TAGS_ID] },
        })
        .await
        .map_err(|source| SequenceError::from_database(name, "read", "find", source))?;
    if let Some(owner) = owner.and_then(|owner| owner.get_str("_id").ok().map(str::to_string)) {
        return Ok(Some(owner));
    }
    let claimant = TagClaimant {
        incarnation,
        unmarked_are_its_own,
    };
    match tag_claim::claim(database, name, tag, claimant).await? {
        Claimed::Its => Ok(None),
        Claimed::Held(holder) => Ok(Some(holder)),
    }
}

/// The fields a new snowflake counter `name` of `incarnation` is written
/// with: a freshly drawn tag (claimed for it) and salt.
pub(super) async fn drawn_fields(
    database: &Database,
    name: &CounterName,
    incarnation: &Incarnation,
) -> Result<Document, SequenceError> {
    let drawn = draw_tag(database, name, Some(incarnation)).await?;
    // The tag claimed, the counter's document not written yet.
    hooks::pass(database.name(), name.as_str(), Point::AfterTagClaimed).await;
    Ok(drawn.fields())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_or_neither() {
        let tag = CounterTag {
            tag: 7,
            salt: 0xfedc_ba98_7654_3210,
        };
        assert_eq!(CounterTag::read(&tag.fields()), Ok(Some(tag)));
        assert_eq!(CounterTag::read(&doc! {}), Ok(None));
        assert!(CounterTag::read(&doc! { "tag": 1 })
            .unwrap_err()
            .contains("salt is missing"));
        assert!(CounterTag::read(&doc! { "salt": "0000000000000000" })
            .unwrap_err()
            .contains("tag is missing"));
        assert!(
            CounterTag::read(&doc! { "tag": 0, "salt": "0000000000000000" })
                .unwrap_err()
                .contains("at least 1")
        );
        assert!(
            CounterTag::read(&doc! { "tag": 1 << 24, "salt": "0000000000000000" })
                .unwrap_err()
                .contains("at most 16777215")
        );
        assert!(CounterTag::read(&doc! { "tag": 1, "salt": "xyz" })
            .unwrap_err()
            .contains("16 hex digits"));
    }

    #[test]
    fn the_salt_is_never_shown() {
        let tag = CounterTag {
            tag: 3,
            salt: 0x1234_5678_9abc_def0,
        };
        assert_eq!(serde_json::to_value(tag).unwrap(), serde_json::json!(3));
        assert!(!format!("{tag:?}").contains("123456789abcdef0"));
    }

    #[test]
    fn no_counter_can_be_named_as_the_tags_document() {
        assert!(CounterName::new(TAGS_ID).is_err());
    }
}
