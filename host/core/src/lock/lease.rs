//! Acquire, renew and release: one conditional update each, decided by the
//! server's clock.

use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};

use super::document::well_formed_expr;
use super::error::check_range;
use super::{LockError, LockName, LockState, LOCKS_COLLECTION, MAX_TTL, MIN_TTL};
use crate::mongo::{self, durable_write_concern};
use crate::random;

/// A handle on one lock for one owner. Acquisitions through the same handle
/// (or handles made with the same owner token) are re-entrant.
#[derive(Debug, Clone)]
pub struct Lock {
    collection: Collection<Document>,
    name: LockName,
    owner: String,
    write_concern: WriteConcern,
}

/// What [`Lock::try_acquire`] found.
#[derive(Debug)]
pub enum Acquired {
    /// The caller holds the lock now.
    Held(Lease),
    /// Someone else does; their state as it was.
    Busy(LockState),
}

/// A held lease. Release it with [`Lease::release`]; dropping it unreleased
/// leaves the lock held until its TTL runs out (and says so on stderr).
#[derive(Debug)]
pub struct Lease {
    lock: Lock,
    token: i64,
    count: i64,
    ttl: Duration,
    released: bool,
}

impl Lock {
    /// A handle on lock `name` in `database` with a fresh random owner token.
    pub fn new(database: &Database, name: LockName) -> Self {
        Self::with_owner(database, name, random::random_token())
    }

    /// A handle with a given owner token (to share re-entrancy across handles).
    pub fn with_owner(database: &Database, name: LockName, owner: String) -> Self {
        Self {
            collection: database.collection(LOCKS_COLLECTION),
            name,
            owner,
            write_concern: durable_write_concern(),
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// This handle's owner token.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub(crate) fn collection(&self) -> &Collection<Document> {
        &self.collection
    }

    /// The filter every write on a held lock starts from: this lock, held by
    /// `owner` with fencing token `token`. A holder that lost its lease no
    /// longer matches it, so it can neither release nor extend the lock.
    fn held_by(&self, owner: &str, token: i64) -> Document {
        doc! { "_id": self.name.as_str(), "owner": owner, "token": token }
    }

    /// One attempt: takes the lock if it is free or expired (a new fencing
    /// token), or again if this owner holds it (the hold count grows).
    pub async fn try_acquire(&self, ttl: Duration) -> Result<Acquired, LockError> {
        let ttl = check_range("lease ttl", ttl, MIN_TTL, MAX_TTL)?;
        let pipeline = acquire_pipeline(&self.owner, ttl.as_millis() as i64);
        let mut attempt = 0;
        let document = loop {
            let result = self
                .collection
                .find_one_and_update(doc! { "_id": self.name.as_str() }, pipeline.clone())
                .upsert(true)
                .return_document(ReturnDocument::After)
                .write_concern(self.write_concern.clone())
                .await;
            match result {
                Ok(Some(document)) => break document,
                // An upsert that lost a race with another one may come back
                // empty (or as a duplicate key): the document exists now, try again.
                Ok(None) if attempt < 10 => attempt += 1,
                Ok(None) => return Err(LockError::NotHeld(self.name.clone())),
                Err(error) if mongo::is_duplicate_key(&error) && attempt < 10 => attempt += 1,
                Err(error) => return Err(LockError::database(&self.name, error)),
            }
        };
        let state = LockState::from_document(&self.name, &document)?;
        if state.owner.as_deref() == Some(self.owner.as_str()) {
            Ok(Acquired::Held(Lease {
                lock: self.clone(),
                token: state.token,
                count: state.count,
                ttl,
                released: false,
            }))
        } else {
            Ok(Acquired::Busy(state))
        }
    }

    /// The lock's state, with the time left by the server's clock; `None`
    /// when it was never taken.
    pub async fn status(&self) -> Result<Option<LockState>, LockError> {
        let states = status_all(&self.collection, Some(&self.name)).await?;
        Ok(states.into_iter().next())
    }

    /// Clears whoever holds the lock (a DBA removing a dead holder) and
    /// returns the state removed. The fencing token is kept, so the next
    /// holder still gets a higher one.
    pub async fn force_release(&self) -> Result<LockState, LockError> {
        let Some(state) = self.status().await? else {
            return Err(LockError::NotHeld(self.name.clone()));
        };
        let Some(owner) = state.owner.clone() else {
            return Err(LockError::NotHeld(self.name.clone()));
        };
        let result = self
            .collection
            .update_one(
                self.held_by(&owner, state.token),
                doc! { "$set": { "owner": Bson::Null, "expiresAt": Bson::Null, "count": 0_i64 } },
            )
            .write_concern(self.write_concern.clone())
            .await
            .map_err(|error| LockError::database(&self.name, error))?;
        if result.matched_count == 0 {
            // It changed hands between the read and the update: nothing removed.
            return Err(LockError::Lost {
                name: self.name.clone(),
                token: state.token,
            });
        }
        Ok(state)
    }
}

/// Every lock (or the one named), read with the server's current time.
pub async fn status_all(
    collection: &Collection<Document>,
    name: Option<&LockName>,
) -> Result<Vec<LockState>, LockError> {
    let mut pipeline = Vec::new();
    if let Some(name) = name {
        pipeline.push(doc! { "$match": { "_id": name.as_str() } });
    }
    pipeline.push(doc! { "$addFields": { "serverNow": "$$NOW" } });
    pipeline.push(doc! { "$sort": { "_id": 1 } });
    let error_name = |n: Option<&LockName>| {
        n.cloned()
            .unwrap_or_else(|| LockName::new("locks").unwrap())
    };
    let documents: Vec<Document> = collection
        .aggregate(pipeline)
        .await
        .map_err(|e| LockError::database(&error_name(name), e))?
        .try_collect()
        .await
        .map_err(|e| LockError::database(&error_name(name), e))?;
    documents
        .iter()
        .map(|document| {
            let id = document.get_str("_id").unwrap_or_default();
            let lock_name = LockName::new(id).or_else(|_| LockName::new("invalid-name"))?;
            LockState::from_document(&lock_name, document)
        })
        .collect()
}

impl Lease {
    /// The fencing token: pass it to whatever the lock protects.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// The hold count after this acquisition (1 for a first acquisition).
    pub fn count(&self) -> i64 {
        self.count
    }

    /// The lease's TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The lock this lease is on.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// Extends the lease to TTL from now (server clock). Fails with
    /// [`LockError::Lost`] once the lease has ended or changed hands.
    pub async fn renew(&self) -> Result<(), LockError> {
        renew(&self.lock, self.token, self.ttl).await
    }

    /// Releases one hold; the lock is free once the count reaches 0. Returns
    /// the hold count left. Fails with [`LockError::Lost`] when the lock is
    /// no longer this owner's with this token (nothing is changed then).
    pub async fn release(mut self) -> Result<i64, LockError> {
        self.released = true;
        let lock = &self.lock;
        let after_count = doc! { "$gt": ["$count", 0] };
        let pipeline = vec![
            doc! { "$set": { "count": { "$subtract": ["$count", 1_i64] } } },
            doc! { "$set": {
                "owner": { "$cond": [after_count.clone(), "$owner", Bson::Null] },
                "expiresAt": { "$cond": [after_count, "$expiresAt", Bson::Null] },
            }},
        ];
        let document = lock
            .collection
            .find_one_and_update(lock.held_by(&lock.owner, self.token), pipeline)
            .return_document(ReturnDocument::After)
            .write_concern(lock.write_concern.clone())
            .await
            .map_err(|error| LockError::database(&lock.name, error))?;
        match document {
            Some(document) => Ok(LockState::from_document(&lock.name, &document)?.count),
            None => Err(LockError::Lost {
                name: lock.name.clone(),
                token: self.token,
            }),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.released {
            eprintln!(
                "idmint: warning: lease on lock '{}' (fencing token {}) dropped without release; \
                 it stays held until its TTL ends",
                self.lock.name, self.token
            );
        }
    }
}

pub(crate) async fn renew(lock: &Lock, token: i64, ttl: Duration) -> Result<(), LockError> {
    let result = lock
        .collection
        .update_one(
            {
                let mut filter = lock.held_by(&lock.owner, token);
                filter.insert("$expr", doc! { "$gt": ["$expiresAt", "$$NOW"] });
                filter
            },
            vec![doc! { "$set": { "expiresAt": expires_expr(ttl.as_millis() as i64) } }],
        )
        .write_concern(lock.write_concern.clone())
        .await
        .map_err(|error| LockError::database(&lock.name, error))?;
    if result.matched_count == 0 {
        return Err(LockError::Lost {
            name: lock.name.clone(),
            token,
        });
    }
    Ok(())
}

/// The acquire update (see the module docs); the JavaScript twin
/// `mongo-js/getLock.js` sends the same pipeline.
pub fn acquire_pipeline(owner: &str, ttl_ms: i64) -> Vec<Document> {
    let live = doc! { "$and": [
        { "$eq": [{ "$type": "$owner" }, "string"] },
        { "$eq": [{ "$type": "$expiresAt" }, "date"] },
        { "$gt": ["$expiresAt", "$$NOW"] },
    ]};
    let mine = doc! { "$and": [live.clone(), { "$eq": ["$owner", owner] }] };
    let expires = expires_expr(ttl_ms);
    let again = doc! { "$mergeObjects": ["$$ROOT", {
        "count": { "$add": [{ "$ifNull": ["$count", 0_i64] }, 1_i64] },
        "expiresAt": expires.clone(),
    }]};
    let fresh = doc! { "$mergeObjects": ["$$ROOT", {
        "owner": owner,
        "token": { "$add": [{ "$ifNull": ["$token", 0_i64] }, 1_i64] },
        "count": 1_i64,
        "expiresAt": expires,
        "acquiredAt": "$$NOW",
    }]};
    vec![doc! { "$replaceWith": { "$cond": [
        well_formed_expr(),
        { "$cond": [mine, again, { "$cond": [live, "$$ROOT", fresh] }] },
        "$$ROOT",
    ]}}]
}

fn expires_expr(ttl_ms: i64) -> Document {
    crate::mongo::server_now_plus(ttl_ms)
}
