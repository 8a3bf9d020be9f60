//! proptest strategies for every corpus type.

use std::collections::HashMap;

use proptest::collection::{hash_map, vec};
use proptest::option;
use proptest::prelude::*;

use super::corpus::*;

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ]{0,12}"
}

fn unit() -> impl Strategy<Value = Unit> {
    prop_oneof![Just(Unit::Metric), Just(Unit::Imperial)]
}

fn address() -> impl Strategy<Value = Address> {
    (text(), text()).prop_map(|(street, city)| Address { street, city })
}

fn finite() -> impl Strategy<Value = f64> {
    -1.0e9..1.0e9
}

pub fn option_scalar() -> impl Strategy<Value = OptionScalar> {
    (text(), option::of(text()), option::of(any::<u32>())).prop_map(|(name, nickname, age)| {
        OptionScalar {
            name,
            nickname,
            age,
        }
    })
}

pub fn option_enum() -> impl Strategy<Value = OptionEnum> {
    (text(), option::of(unit())).prop_map(|(city, unit)| OptionEnum { city, unit })
}

pub fn option_struct() -> impl Strategy<Value = OptionStruct> {
    (text(), option::of(address())).prop_map(|(name, address)| OptionStruct { name, address })
}

pub fn option_vec() -> impl Strategy<Value = OptionVec> {
    (
        option::of(vec(text(), 0..4)),
        prop_oneof![Just(Priority::Low), Just(Priority::High)],
    )
        .prop_map(|(labels, priority)| OptionVec { labels, priority })
}

pub fn documented_enum() -> impl Strategy<Value = DocumentedEnum> {
    unit().prop_map(|unit| DocumentedEnum { unit })
}

pub fn internally_tagged() -> impl Strategy<Value = InternallyTagged> {
    prop_oneof![
        finite().prop_map(|radius| Shape::Circle { radius }),
        (finite(), finite()).prop_map(|(width, height)| Shape::Rectangle { width, height }),
    ]
    .prop_map(|shape| InternallyTagged { shape })
}

pub fn externally_tagged() -> impl Strategy<Value = ExternallyTagged> {
    prop_oneof![
        Just(Action::Stop),
        (any::<i32>(), any::<i32>()).prop_map(|(dx, dy)| Action::Move { dx, dy }),
        text().prop_map(Action::Say),
    ]
    .prop_map(|action| ExternallyTagged { action })
}

pub fn adjacently_tagged() -> impl Strategy<Value = AdjacentlyTagged> {
    prop_oneof![
        (any::<u16>(), any::<u16>()).prop_map(|(x, y)| Event::Click { x, y }),
        text().prop_map(Event::Key),
    ]
    .prop_map(|event| AdjacentlyTagged { event })
}

pub fn nested_structs() -> impl Strategy<Value = NestedStructs> {
    (text(), any::<u32>()).prop_map(|(model, power_kw)| NestedStructs {
        car: Car {
            model,
            engine: Engine { power_kw },
        },
    })
}

pub fn vec_of_struct() -> impl Strategy<Value = VecOfStruct> {
    vec(
        (text(), any::<u32>()).prop_map(|(sku, qty)| Item { sku, qty }),
        0..4,
    )
    .prop_map(|items| VecOfStruct { items })
}

pub fn map() -> impl Strategy<Value = Map> {
    hash_map(text(), any::<u32>(), 0..4).prop_map(|counts| Map { counts })
}

pub fn flatten_struct() -> impl Strategy<Value = FlattenStruct> {
    (text(), any::<u32>(), any::<u32>()).prop_map(|(query, page, per_page)| FlattenStruct {
        query,
        paging: Paging { page, per_page },
    })
}

pub fn flatten_map() -> impl Strategy<Value = FlattenMap> {
    (text(), hash_map("x_[a-z]{1,6}", text(), 0..4))
        .prop_map(|(id, extra): (String, HashMap<String, String>)| FlattenMap { id, extra })
}

pub fn rename_all() -> impl Strategy<Value = RenameAll> {
    (text(), text(), any::<bool>()).prop_map(|(first_name, last_name, wants_newsletter)| {
        RenameAll {
            first_name,
            last_name,
            wants_newsletter,
        }
    })
}

pub fn defaults() -> impl Strategy<Value = Defaults> {
    (text(), any::<u32>(), any::<bool>()).prop_map(|(query, limit, archived)| Defaults {
        query,
        limit,
        archived,
    })
}

pub fn deny_unknown() -> impl Strategy<Value = DenyUnknown> {
    text().prop_map(|path| DenyUnknown { path })
}

pub fn integers() -> impl Strategy<Value = Integers> {
    (
        any::<u8>(),
        any::<u16>(),
        any::<u32>(),
        any::<u64>(),
        any::<i64>(),
    )
        .prop_map(|(byte, port, count, big, offset)| Integers {
            byte,
            port,
            count,
            big,
            offset,
        })
}

pub fn float() -> impl Strategy<Value = Float> {
    (-1.0e6f32..1.0e6f32).prop_map(|temperature| Float { temperature })
}

fn tree() -> impl Strategy<Value = TreeNode> {
    let leaf = text().prop_map(|label| TreeNode {
        label,
        children: Vec::new(),
    });
    leaf.prop_recursive(3, 12, 3, |inner| {
        (text(), vec(inner, 0..3)).prop_map(|(label, children)| TreeNode { label, children })
    })
}

pub fn recursive() -> impl Strategy<Value = Recursive> {
    tree().prop_map(|root| Recursive { root })
}

pub fn date_strings() -> impl Strategy<Value = DateStrings> {
    (
        "20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])",
        "20[0-9]{2}-0[1-9]-1[0-9]T(0[0-9]|1[0-9]):[0-5][0-9]:[0-5][0-9]Z",
    )
        .prop_map(|(day, at)| DateStrings { day, at })
}

pub fn ten_levels() -> impl Strategy<Value = TenLevels> {
    text().prop_map(|value| TenLevels {
        next: Level2 {
            next: Level3 {
                next: Level4 {
                    next: Level5 {
                        next: Level6 {
                            next: Level7 {
                                next: Level8 {
                                    next: Level9 {
                                        next: Level10 { value },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    })
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        finite().prop_map(|radius| Shape::Circle { radius }),
        (finite(), finite()).prop_map(|(width, height)| Shape::Rectangle { width, height }),
    ]
}

fn priority() -> impl Strategy<Value = Priority> {
    prop_oneof![Just(Priority::Low), Just(Priority::High)]
}

pub fn option_nested() -> impl Strategy<Value = OptionNested> {
    let hotel = (text(), option::of(any::<u8>())).prop_map(|(name, stars)| Hotel { name, stars });
    let stop = (
        text(),
        option::of(any::<u32>()),
        option::of(hotel),
        option::of(shape()),
    )
        .prop_map(|(city, nights, hotel, square)| Stop {
            city,
            nights,
            hotel,
            square,
        });
    (
        text(),
        option::of(any::<u32>()),
        option::of(stop),
        option::of(finite()),
        option::of(any::<bool>()),
    )
        .prop_map(
            |(name, delay_minutes, stop, budget, insured)| OptionNested {
                name,
                delay_minutes,
                stop,
                budget,
                insured,
            },
        )
}

pub fn option_in_arrays() -> impl Strategy<Value = OptionInArrays> {
    let attendee = (
        text(),
        option::of(priority()),
        option::of(unit()),
        option::of(text()),
    )
        .prop_map(|(email, priority, unit, note)| Attendee {
            email,
            priority,
            unit,
            note,
        });
    let item = (text(), any::<u32>()).prop_map(|(sku, qty)| Item { sku, qty });
    (
        vec(attendee, 0..3),
        option::of(vec(option::of(text()), 0..4)),
        option::of(vec(item, 0..3)),
    )
        .prop_map(|(attendees, labels, items)| OptionInArrays {
            attendees,
            labels,
            items,
        })
}

/// `title` is never `Some(None)`: serde writes that as `null` and reads `null` back as `None`, so it
/// cannot round-trip through JSON whatever the schema says.
pub fn option_dates() -> impl Strategy<Value = OptionDates> {
    (
        option::of("20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"),
        option::of("20[0-9]{2}-0[1-9]-1[0-9]T(0[0-9]|1[0-9]):[0-5][0-9]:[0-5][0-9]Z"),
        option::of(text().prop_map(Some)),
    )
        .prop_map(|(day, at, title)| OptionDates { day, at, title })
}

pub fn flattened_root() -> impl Strategy<Value = FlattenedRoot> {
    let action = prop_oneof![
        text().prop_map(|reason| TicketAction::Close { reason }),
        (text(), option::of(any::<bool>()))
            .prop_map(|(assignee, notify)| TicketAction::Assign { assignee, notify }),
        Just(TicketAction::Reopen),
    ];
    (text(), action).prop_map(|(ticket, action)| FlattenedRoot { ticket, action })
}

pub fn tagged_root() -> impl Strategy<Value = TaggedRoot> {
    prop_oneof![
        text().prop_map(|path| TaggedRoot::Read { path }),
        (text(), text()).prop_map(|(path, content)| TaggedRoot::Write { path, content }),
        (text(), any::<u64>()).prop_map(|(path, size)| TaggedRoot::Truncate { path, size }),
    ]
}

pub fn untagged_root() -> impl Strategy<Value = UntaggedRoot> {
    prop_oneof![
        any::<u64>().prop_map(|id| UntaggedRoot::ById { id }),
        (text(), option::of(any::<bool>()))
            .prop_map(|(name, exact)| UntaggedRoot::ByName { name, exact }),
    ]
}

pub fn tuples() -> impl Strategy<Value = Tuples> {
    (
        (text(), any::<u32>()),
        option::of((finite(), finite())),
        vec((text(), any::<u32>()), 0..3),
    )
        .prop_map(|(pair, point, scores)| Tuples {
            pair,
            point,
            scores,
        })
}
