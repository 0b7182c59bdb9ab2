//! [`Stamps`]: the stamps of one take, in the order issued. One stamp is
//! held inline, so a take of one value (the commonest: one ID per request)
//! allocates nothing; more are held in a `Vec`.

use std::ops::Deref;

use serde::Serialize;

use super::Stamp;

/// The stamps of one take, in the order issued: a slice of [`Stamp`]s
/// (it derefs to `[Stamp]`), held inline when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamps(Held);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Held {
    One(Stamp),
    Many(Vec<Stamp>),
}

impl Stamps {
    /// One stamp, held inline.
    pub fn one(stamp: Stamp) -> Self {
        Stamps(Held::One(stamp))
    }

    /// The stamps as a `Vec` (allocates when there is one).
    pub fn into_vec(self) -> Vec<Stamp> {
        match self.0 {
            Held::One(stamp) => vec![stamp],
            Held::Many(stamps) => stamps,
        }
    }
}

impl Default for Stamps {
    fn default() -> Self {
        Stamps(Held::Many(Vec::new()))
    }
}

impl Deref for Stamps {
    type Target = [Stamp];

    fn deref(&self) -> &[Stamp] {
        match &self.0 {
            Held::One(stamp) => std::slice::from_ref(stamp),
            Held::Many(stamps) => stamps,
        }
    }
}

impl From<Vec<Stamp>> for Stamps {
    fn from(stamps: Vec<Stamp>) -> Self {
        Stamps(Held::Many(stamps))
    }
}

impl From<Stamp> for Stamps {
    fn from(stamp: Stamp) -> Self {
        Stamps::one(stamp)
    }
}

impl From<Stamps> for Vec<Stamp> {
    fn from(stamps: Stamps) -> Self {
        stamps.into_vec()
    }
}

impl FromIterator<Stamp> for Stamps {
    fn from_iter<I: IntoIterator<Item = Stamp>>(iter: I) -> Self {
        Stamps(Held::Many(iter.into_iter().collect()))
    }
}

impl PartialEq<Vec<Stamp>> for Stamps {
    fn eq(&self, other: &Vec<Stamp>) -> bool {
        **self == **other
    }
}

impl Serialize for Stamps {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

/// The stamps of a [`Stamps`], by value.
#[derive(Debug)]
pub struct IntoIter(Iter);

#[derive(Debug)]
enum Iter {
    One(std::option::IntoIter<Stamp>),
    Many(std::vec::IntoIter<Stamp>),
}

impl Iterator for IntoIter {
    type Item = Stamp;

    fn next(&mut self) -> Option<Stamp> {
        match &mut self.0 {
            Iter::One(one) => one.next(),
            Iter::Many(many) => many.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Iter::One(one) => one.size_hint(),
            Iter::Many(many) => many.size_hint(),
        }
    }
}

impl ExactSizeIterator for IntoIter {}

impl IntoIterator for Stamps {
    type Item = Stamp;
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter(match self.0 {
            Held::One(stamp) => Iter::One(Some(stamp).into_iter()),
            Held::Many(stamps) => Iter::Many(stamps.into_iter()),
        })
    }
}

impl<'a> IntoIterator for &'a Stamps {
    type Item = &'a Stamp;
    type IntoIter = std::slice::Iter<'a, Stamp>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stamp_reads_as_a_slice_of_one_and_many_as_theirs() {
        let one = Stamps::one(Stamp::new(5, 1));
        assert_eq!(&*one, &[Stamp::new(5, 1)]);
        assert_eq!(one.clone().into_vec(), vec![Stamp::new(5, 1)]);
        assert_eq!(one.into_iter().collect::<Vec<_>>(), vec![Stamp::new(5, 1)]);

        let many: Stamps = (1..=3).map(|value| Stamp::new(5, value)).collect();
        assert_eq!(many.len(), 3);
        assert_eq!(
            many.iter().map(|s| s.sequence).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(many.into_iter().len(), 3);
        assert!(Stamps::default().is_empty());
    }

    #[test]
    fn serializes_as_a_list_either_way() {
        let one = serde_json::to_string(&Stamps::one(Stamp::new(5, 1))).unwrap();
        let many = serde_json::to_string(&Stamps::from(vec![Stamp::new(5, 1)])).unwrap();
        assert_eq!(one, many);
        assert!(one.starts_with('['));
    }
}
