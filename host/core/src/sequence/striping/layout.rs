//! Where a generation's lanes go, as `--stripes` says it: `4` (four lanes
//! in the counter's own deployment) or `eu:2,us:1` (two lanes in
//! deployment `eu`, then one in `us`; residues are given in that order).

use std::fmt;
use std::str::FromStr;

use super::arithmetic::MAX_LANES;
use super::deployments::check_deployment_name;

/// How many lanes a generation has, and in which deployments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Each deployment's lanes, in order (one unnamed entry: the counter's
    /// own deployment).
    stripes: Vec<(Option<String>, u64)>,
}

impl Layout {
    /// `lanes` lanes in the counter's own deployment.
    pub fn count(lanes: u64) -> Self {
        Self {
            stripes: vec![(None, lanes)],
        }
    }

    /// How many lanes in all: the generation's modulus.
    pub fn modulus(&self) -> u64 {
        self.stripes.iter().map(|(_, lanes)| lanes).sum()
    }

    /// Whether it names deployments.
    pub fn is_named(&self) -> bool {
        self.stripes[0].0.is_some()
    }

    /// The deployment of each lane, by residue (empty: unnamed).
    pub fn placement(&self) -> Vec<String> {
        self.stripes
            .iter()
            .filter_map(|(deployment, lanes)| Some((deployment.as_ref()?, *lanes)))
            .flat_map(|(deployment, lanes)| (0..lanes).map(move |_| deployment.clone()))
            .collect()
    }

    /// The deployments it names, in order.
    pub fn deployments(&self) -> Vec<String> {
        self.stripes
            .iter()
            .filter_map(|(deployment, _)| deployment.clone())
            .collect()
    }
}

impl FromStr for Layout {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let lanes = |count: &str| -> Result<u64, String> {
            match count.trim().parse::<u64>() {
                Ok(lanes) if (1..=MAX_LANES).contains(&lanes) => Ok(lanes),
                _ => Err(format!(
                    "{count:?} is not a number of lanes from 1 to {MAX_LANES}"
                )),
            }
        };
        if !text.contains(':') {
            return Ok(Self::count(lanes(text)?));
        }
        let mut stripes: Vec<(Option<String>, u64)> = Vec::new();
        for part in text.split(',') {
            let Some((deployment, count)) = part.split_once(':') else {
                return Err(format!(
                    "{part:?} does not say DEPLOYMENT:LANES (as in eu:2,us:2)"
                ));
            };
            let deployment = deployment.trim();
            check_deployment_name(deployment)?;
            if stripes
                .iter()
                .any(|(seen, _)| seen.as_deref() == Some(deployment))
            {
                return Err(format!("deployment {deployment:?} is named twice"));
            }
            stripes.push((Some(deployment.to_string()), lanes(count)?));
        }
        let layout = Self { stripes };
        if layout.modulus() > MAX_LANES {
            return Err(format!(
                "{} lanes in all: a striped counter has at most {MAX_LANES}",
                layout.modulus()
            ));
        }
        Ok(layout)
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .stripes
            .iter()
            .map(|(deployment, lanes)| match deployment {
                Some(deployment) => format!("{deployment}:{lanes}"),
                None => lanes.to_string(),
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_count_or_deployments_with_their_lanes() {
        let four: Layout = "4".parse().unwrap();
        assert_eq!((four.modulus(), four.is_named()), (4, false));
        assert!(four.placement().is_empty());
        let spread: Layout = "eu:2, us:1".parse().unwrap();
        assert_eq!(spread.modulus(), 3);
        assert_eq!(spread.placement(), ["eu", "eu", "us"]);
        assert_eq!(spread.deployments(), ["eu", "us"]);
        assert_eq!(spread.to_string(), "eu:2,us:1");
    }

    #[test]
    fn names_what_is_wrong() {
        for (text, needle) in [
            ("0", "\"0\" is not a number of lanes"),
            ("eu:2,eu:1", "named twice"),
            ("eu:2,us", "does not say DEPLOYMENT:LANES"),
            ("EU:2", "is not a deployment name"),
            ("eu:x", "\"x\" is not a number of lanes"),
            ("eu:1000,us:1000", "at most"),
        ] {
            let error = text.parse::<Layout>().unwrap_err();
            assert!(error.contains(needle), "{text}: {error}");
        }
    }
}
