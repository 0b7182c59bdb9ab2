//! The command that takes values from one lane of a striped counter, for
//! an application in another language (`idmint pipeline NAME --lane R`):
//! the lane's take ([`lane::take_command`], the one the host's taker and
//! the stored `getNextSequence` send) as a `findAndModify` of the shape
//! every command `idmint pipeline` prints.
//!
//! The command names a lane (`NAME#R`), not a generation: the value is
//! computed on the server from the lane document's own base, modulus and
//! residue, so it hands out values of whichever generation lane R is of,
//! never local ones. A change of stripes seals lane R: from then on the
//! command matches nothing (`value: null`) until a new generation writes
//! a lane R, which it then takes from; a change to fewer lanes than R + 1
//! leaves lane R sealed for good, and the application must ask `idmint
//! pipeline` again for a lane that exists. An autoinc or segment lane of a
//! counter across deployments also matches nothing once a take would pass
//! its `ceiling`, which only idmint's takers raise (`lane.rs`'s
//! [`lane::CEILING`]): the command cannot raise it.

use mongodb::bson::Document;

use super::arithmetic::lane_id;
use super::error::StripingError;
use super::lane;
use super::map::StripeMap;
use crate::sequence::command::find_and_modify;
use crate::sequence::error::striping;
use crate::sequence::error::SequenceError;
use crate::sequence::kind_trait::ClientTime;
use crate::sequence::kinds;
use crate::sequence::name::CounterName;

/// The `findAndModify` command that takes `count` values from lane
/// `residue` of striped counter `name`, whose map is `map` (see the
/// module docs): `value` in its answer is the lane after the take, whose
/// `last` is the last value taken (autoinc: the values are
/// `last - (count - 1) * lane.m`, then every `lane.m`, up to `last`;
/// cyclic: with the timestamp `ts`, floored at `client`), or null when
/// nothing was taken.
/// Refused for a lane the map does not have, or while the map has no
/// live lane (a change of stripes under way).
pub fn lane_take_command(
    name: &CounterName,
    map: &StripeMap,
    residue: u64,
    count: u64,
    client: ClientTime,
) -> Result<Document, SequenceError> {
    let Some(of) = map.lanes_of() else {
        return Err(striping(
            name,
            StripingError::NotStripable {
                kind: map.kind.clone(),
            },
        ));
    };
    if let Some(reason) = of.lanes().no_command() {
        return Err(SequenceError::NoCommand {
            kind: of.kind(),
            reason,
        });
    }
    if !map.live {
        return Err(striping(
            name,
            StripingError::NoLiveLane {
                generation: map.generation,
            },
        ));
    }
    map.lanes_generation()
        .lane(residue)
        .map_err(|error| striping(name, error))?;
    let (mut filter, update) =
        lane::take_command(&lane_id(name, residue), &of, count, client.expression());
    lane::of_counter(&mut filter, map.incarnation.as_ref());
    Ok(find_and_modify(filter, update))
}

/// How an application reads the values of the answer of a lane's take
/// command of a counter of `kind`, in words (its kind says).
pub fn how_to_read_a_lane_take(kind: &str) -> &'static str {
    kinds::lanes(kind).map_or(
        "the value is `value.last` (with --count N, the N values `value.lane.m` apart up to it)",
        |lanes| lanes.how_to_read(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::striping::Generation;

    fn map(live: bool) -> StripeMap {
        StripeMap {
            live,
            ..StripeMap::live(
                &lane::lanes_of("autoinc", &mongodb::bson::doc! {}).unwrap(),
                2,
                Generation::new(40, 3).unwrap(),
            )
        }
    }

    #[test]
    fn the_command_is_the_lanes_take() {
        let name = CounterName::new("orders").unwrap();
        let now = ClientTime::Micros(7);
        let command = lane_take_command(&name, &map(true), 2, 5, now).unwrap();
        let (mut filter, update) = lane::take_command(
            "orders#2",
            &lane::lanes_of("autoinc", &mongodb::bson::doc! {}).unwrap(),
            5,
            now.expression(),
        );
        // Of the map's counter, or written before incarnations.
        lane::of_counter(&mut filter, None);
        assert_eq!(command.get_document("query").unwrap(), &filter);
        let update: Vec<mongodb::bson::Bson> = update.into_iter().map(Into::into).collect();
        assert_eq!(command.get_array("update").unwrap(), &update);
        assert_eq!(command.get_str("findAndModify").unwrap(), "counters");
        assert!(command.get_bool("new").unwrap());
    }

    #[test]
    fn refuses_a_lane_the_map_does_not_have_or_a_map_without_live_lanes() {
        let name = CounterName::new("orders").unwrap();
        let past = lane_take_command(&name, &map(true), 3, 1, ClientTime::ServerNow).unwrap_err();
        assert_eq!(
            past.to_string(),
            "counter 'orders': lane 3 does not exist in a generation of 3 lanes"
        );
        let changing =
            lane_take_command(&name, &map(false), 0, 1, ClientTime::ServerNow).unwrap_err();
        assert!(
            changing
                .to_string()
                .contains("generation 2 has no live lane"),
            "{changing}"
        );
        let hilo = StripeMap {
            kind: "hilo".into(),
            ..map(true)
        };
        let refused = lane_take_command(&name, &hilo, 0, 1, ClientTime::ServerNow).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("hilo counters cannot be striped"),
            "{refused}"
        );
    }
}
