//! Stored records as their own versioned types: what the journal, blocks
//! and sled values hold, declared apart from the domain structs.
//!
//! Each stored type has its layouts here, layout 1 first, each a serde
//! remote mirror of the domain type, or for an enum of plain variants an
//! `enum_layout!` that gives each variant its stored index (`accounts.rs`,
//! `resources.rs`); webhook events, whose layout 2 names their resource
//! instead of copying it, are `events.rs`, the changing fields it keeps
//! declared with their resource (`layout_with_changes!`). A
//! mirror names every field, so adding, removing or retyping a domain field
//! does not compile until the stored side says how it is kept: a new layout
//! (read beside the old ones, converted into the domain type) or a change
//! the old bytes still decode to.
//!
//! A value is written as `LAYOUT_TAG`, its layout number, then its fields
//! in that layout; a journal record is tagged so, and so is every resource
//! it carries (a block holds those spans of the record as they are). Data
//! formats up to 5 wrote no tags: what they wrote is layout 1 exactly. A
//! top-level value that does not begin with the tag is such an old one, and
//! everything in it is read as layout 1. No old value can begin with the
//! tag: each begins with a uuid (its length, 16) or a bincode varint, and
//! no varint begins with 0xFF.

mod accounts;
#[cfg(test)]
mod event_tests;
mod events;
mod resources;
#[cfg(test)]
pub(super) mod tests;

pub(crate) use accounts::*;
pub(crate) use events::*;
pub(crate) use resources::*;

use crate::domain::catalog::PayoutRouting;
use crate::domain::webhook::{EventDeliveryVersion, WebhookAttempt};
use crate::domain::{Bank, Beneficiary, Disbursement, DisbursementBatch, Ewallet, MerchantRecord, MerchantUser};
use crate::domain::{Order, Organization, PaymentVendorConfig, Refund, Settlement, VendorRouting};
use crate::ledger::{Entry, MerchantBook};
use crate::money::MinorUnits;
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_with::{DeserializeAs, SerializeAs};
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

/// The first byte of every tagged value.
pub const LAYOUT_TAG: u8 = 0xFF;

std::thread_local! {
    /// Set while a value from before layout tags (data format 5 or older)
    /// is decoded: its nested values carry no tags either.
    static UNTAGGED: Cell<bool> = const { Cell::new(false) };
}

/// A type kept on disk through its own layouts.
pub trait Stored: Sized {
    /// The layout new values are written in.
    const NEWEST: u32;

    /// Writes `self`'s fields in layout `NEWEST`.
    fn serialize_newest<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;

    /// Reads the fields of layout `layout` as the next element of `seq`:
    /// `Err` for a layout this build does not know.
    fn next_in_layout<'de, A: SeqAccess<'de>>(layout: u32, seq: &mut A) -> Result<Option<Self>, A::Error>;

    /// Reads the fields of layout 1, from a value written before tags.
    fn deserialize_untagged<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

/// A `Stored` value as `serde_as` writes it into a record: tagged, in its
/// newest layout; read in whichever layout it was written.
pub struct Versioned;

impl<T: Stored> SerializeAs<T> for Versioned {
    fn serialize_as<S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
        struct Fields<'a, T>(&'a T);
        impl<T: Stored> Serialize for Fields<'_, T> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.0.serialize_newest(serializer)
            }
        }
        let mut tuple = serializer.serialize_tuple(3)?;
        tuple.serialize_element(&LAYOUT_TAG)?;
        tuple.serialize_element(&T::NEWEST)?;
        tuple.serialize_element(&Fields(value))?;
        tuple.end()
    }
}

impl<'de, T: Stored> DeserializeAs<'de, T> for Versioned {
    fn deserialize_as<D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
        if UNTAGGED.get() {
            return T::deserialize_untagged(deserializer);
        }
        deserializer.deserialize_tuple(3, TaggedVisitor(PhantomData))
    }
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: Stored> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a layout tag, a layout number and the fields")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        let tag: u8 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        if tag != LAYOUT_TAG {
            return Err(de::Error::custom(format_args!(
                "a stored value begins with {tag:#04x}, not the layout tag"
            )));
        }
        let layout: u32 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
        T::next_in_layout(layout, &mut seq)?.ok_or_else(|| de::Error::invalid_length(2, &self))
    }
}

/// Decodes a top-level value with `decode` (tagged, or untagged from an
/// older format when `bytes` does not begin with the tag).
pub fn decode_top_level<R>(bytes: &[u8], decode: impl FnOnce() -> R) -> R {
    let untagged = bytes.first() != Some(&LAYOUT_TAG);
    let outer = UNTAGGED.replace(untagged);
    let result = decode();
    UNTAGGED.set(outer);
    result
}

/// Lets a layout mirror stand for its domain type in `serde_as` (as a
/// field of another mirror, or inside `Versioned`).
macro_rules! layout_of {
    ($($domain:ty => $layout:ty),* $(,)?) => {$(
        impl ::serde_with::SerializeAs<$domain> for $layout {
            fn serialize_as<S: ::serde::Serializer>(value: &$domain, serializer: S) -> Result<S::Ok, S::Error> {
                <$layout>::serialize(value, serializer)
            }
        }
        impl<'de> ::serde_with::DeserializeAs<'de, $domain> for $layout {
            fn deserialize_as<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<$domain, D::Error> {
                <$layout>::deserialize(deserializer)
            }
        }
    )*};
}

/// Declares the layout of a resource whose domain type is declared with
/// `resource_with_changes!` and, from the same field list, the layout of
/// its changes struct: both serde remote mirrors, each field in the place
/// it is written in. The full layout has every field in its order; the
/// changes layout has the fields marked `changing first`, then those marked
/// `changing`, each group in its order (a layout 1 of changes that does not
/// follow its resource's order says so with `first`). A field not marked is
/// in the full layout only; the mirrors' field checks against the domain
/// types catch a field marked wrongly.
///
/// ```text
/// layout_with_changes! {
///     /// Layout 1 of [`Thing`].
///     #[serde(remote = "Thing")]
///     pub(crate) struct ThingV1 {
///         id: Uuid,
///         #[serde_as(as = "MinorUnitsV1")]
///         changing amount: MinorUnits,
///         changing first status: Status,
///     }
///
///     /// Layout 1 of [`ThingChanges`]: status, amount.
///     #[serde(remote = "ThingChanges")]
///     pub(crate) struct ThingChangesV1;
/// }
/// ```
macro_rules! layout_with_changes {
    (
        $(#[$($attr:tt)*])*
        $vis:vis struct $name:ident { $($fields:tt)* }
        $(#[$($changes_attr:tt)*])*
        $changes_vis:vis struct $changes:ident;
    ) => {
        $crate::store::stored::layout_with_changes!(
            @split [$(#[$($attr)*])* $vis struct $name] [$(#[$($changes_attr)*])* $changes_vis struct $changes]
            [] [] []
            $($fields)*
        );
    };
    (
        @split $full:tt $changes:tt [$($all:tt)*] [$($first:tt)*] $changing:tt
        $(#[$($field_attr:tt)*])* changing first $field:ident : $ty:ty, $($rest:tt)*
    ) => {
        $crate::store::stored::layout_with_changes!(
            @split $full $changes [$($all)* $(#[$($field_attr)*])* $field: $ty,]
            [$($first)* $(#[$($field_attr)*])* $field: $ty,] $changing
            $($rest)*
        );
    };
    (
        @split $full:tt $changes:tt [$($all:tt)*] $first:tt [$($changing:tt)*]
        $(#[$($field_attr:tt)*])* changing $field:ident : $ty:ty, $($rest:tt)*
    ) => {
        $crate::store::stored::layout_with_changes!(
            @split $full $changes [$($all)* $(#[$($field_attr)*])* $field: $ty,] $first
            [$($changing)* $(#[$($field_attr)*])* $field: $ty,]
            $($rest)*
        );
    };
    (
        @split $full:tt $changes:tt [$($all:tt)*] $first:tt $changing:tt
        $(#[$($field_attr:tt)*])* $field:ident : $ty:ty, $($rest:tt)*
    ) => {
        $crate::store::stored::layout_with_changes!(
            @split $full $changes [$($all)* $(#[$($field_attr)*])* $field: $ty,] $first $changing
            $($rest)*
        );
    };
    (@split [$($full:tt)*] [$($changes:tt)*] [$($all:tt)*] [$($first:tt)*] [$($changing:tt)*]) => {
        #[::serde_with::serde_as]
        #[derive(::serde::Serialize, ::serde::Deserialize)]
        $($full)* { $($all)* }

        #[::serde_with::serde_as]
        #[derive(::serde::Serialize, ::serde::Deserialize)]
        $($changes)* { $($first)* $($changing)* }
    };
}

pub(crate) use layout_with_changes;

/// Declares the layout of an enum whose variants carry plain values or
/// none, as serde's derive wrote it: a variant is its stored index (the
/// `u32` bincode encodes a variant by), then its values in order. The index
/// stands beside each variant, so it cannot move with the order of a
/// declaration, and the exhaustive `match` on the domain type does not
/// compile until a new variant is given one. A newtype variant names its
/// value, only for the two directions to bind it by.
///
/// ```text
/// enum_layout! {
///     /// Layout 1 of [`Thing`].
///     ThingV1 for Thing { Plain = 0, Coded(code: String) = 1, Account { bank: String, number: String } = 2 }
///     /// Layout 1 of [`Kind`].
///     KindV1 for Kind { One = 0, Other = 1 }
/// }
/// ```
macro_rules! enum_layout {
    ($( $(#[$doc:meta])* $layout:ident for $domain:ident $variants:tt )+) => {
        $( $crate::store::stored::enum_layout!(@one $(#[$doc])* $layout for $domain $variants); )+
    };
    (
        @one $(#[$doc:meta])*
        $layout:ident for $domain:ident {
            $( $variant:ident $( ( $value:ident : $value_ty:ty ) )? $( { $($field:ident : $field_ty:ty),+ $(,)? } )?
                = $index:literal ),+ $(,)?
        }
    ) => {
        $(#[$doc])*
        pub(crate) struct $layout;

        impl ::serde_with::SerializeAs<$domain> for $layout {
            fn serialize_as<S: ::serde::Serializer>(value: &$domain, serializer: S) -> Result<S::Ok, S::Error> {
                match value {$(
                    $crate::store::stored::enum_layout!(@pattern $domain $variant $(($value))? $({ $($field)+ })?) =>
                        $crate::store::stored::enum_layout!(
                            @serialize serializer $layout $index $variant $(($value))? $({ $($field)+ })?
                        ),
                )+}
            }
        }

        impl<'de> ::serde_with::DeserializeAs<'de, $domain> for $layout {
            fn deserialize_as<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<$domain, D::Error> {
                const VARIANTS: &[&str] = &[$(stringify!($variant)),+];
                struct Variants;
                impl<'de> ::serde::de::Visitor<'de> for Variants {
                    type Value = $domain;

                    fn expecting(&self, formatter: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                        write!(formatter, "variant index 0 <= i < {}", VARIANTS.len())
                    }

                    fn visit_enum<A: ::serde::de::EnumAccess<'de>>(self, data: A) -> Result<$domain, A::Error> {
                        let (index, variant): (u32, A::Variant) = data.variant()?;
                        match index {
                            $( $index => $crate::store::stored::enum_layout!(
                                @deserialize variant $layout $domain $variant $(($value : $value_ty))?
                                    $({ $($field : $field_ty),+ })?
                            ), )+
                            other => Err(::serde::de::Error::invalid_value(
                                ::serde::de::Unexpected::Unsigned(other.into()),
                                &self,
                            )),
                        }
                    }
                }
                deserializer.deserialize_enum(stringify!($layout), VARIANTS, Variants)
            }
        }
    };
    (@pattern $domain:ident $variant:ident) => { $domain::$variant };
    (@pattern $domain:ident $variant:ident ($value:ident)) => { $domain::$variant($value) };
    (@pattern $domain:ident $variant:ident { $($field:ident)+ }) => { $domain::$variant { $($field),+ } };
    (@serialize $serializer:ident $layout:ident $index:literal $variant:ident) => {
        $serializer.serialize_unit_variant(stringify!($layout), $index, stringify!($variant))
    };
    (@serialize $serializer:ident $layout:ident $index:literal $variant:ident ($value:ident)) => {
        $serializer.serialize_newtype_variant(stringify!($layout), $index, stringify!($variant), $value)
    };
    (@serialize $serializer:ident $layout:ident $index:literal $variant:ident { $($field:ident)+ }) => {{
        use ::serde::ser::SerializeStructVariant;
        const FIELDS: &[&str] = &[$(stringify!($field)),+];
        let mut fields =
            $serializer.serialize_struct_variant(stringify!($layout), $index, stringify!($variant), FIELDS.len())?;
        $( fields.serialize_field(stringify!($field), $field)?; )+
        fields.end()
    }};
    (@deserialize $access:ident $layout:ident $domain:ident $variant:ident) => {
        ::serde::de::VariantAccess::unit_variant($access).map(|()| $domain::$variant)
    };
    (@deserialize $access:ident $layout:ident $domain:ident $variant:ident ($value:ident : $value_ty:ty)) => {
        ::serde::de::VariantAccess::newtype_variant::<$value_ty>($access).map($domain::$variant)
    };
    (@deserialize $access:ident $layout:ident $domain:ident $variant:ident { $($field:ident : $field_ty:ty),+ }) => {{
        struct Fields;
        impl<'de> ::serde::de::Visitor<'de> for Fields {
            type Value = $domain;

            fn expecting(&self, formatter: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                formatter.write_str(concat!("struct variant ", stringify!($layout), "::", stringify!($variant)))
            }

            fn visit_seq<A: ::serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<$domain, A::Error> {
                let mut read = 0;
                $( let $field = {
                    read += 1;
                    seq.next_element::<$field_ty>()?
                        .ok_or_else(|| ::serde::de::Error::invalid_length(read - 1, &self))?
                }; )+
                Ok($domain::$variant { $($field),+ })
            }
        }
        ::serde::de::VariantAccess::struct_variant($access, &[$(stringify!($field)),+], Fields)
    }};
}

pub(crate) use enum_layout;

/// `Stored` for types with one layout so far.
macro_rules! stored_in_layout_1 {
    ($($domain:ty => $layout:ty),* $(,)?) => {$(
        impl Stored for $domain {
            const NEWEST: u32 = 1;

            fn serialize_newest<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                <$layout>::serialize(self, serializer)
            }

            fn next_in_layout<'de, A: SeqAccess<'de>>(layout: u32, seq: &mut A) -> Result<Option<Self>, A::Error> {
                match layout {
                    1 => Ok(seq
                        .next_element::<serde_with::de::DeserializeAsWrap<$domain, $layout>>()?
                        .map(serde_with::de::DeserializeAsWrap::into_inner)),
                    newer => Err(unknown_layout::<A::Error>(stringify!($domain), newer)),
                }
            }

            fn deserialize_untagged<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                <$layout>::deserialize(deserializer)
            }
        }
    )*};
}

pub(crate) use layout_of;

/// A layout this build does not read: written by a newer one.
pub fn unknown_layout<E: de::Error>(what: &str, layout: u32) -> E {
    E::custom(format_args!("{what} in layout {layout}, newer than this build reads"))
}

/// Layout 1 of `MinorUnits`: the amount in minor units.
pub(crate) struct MinorUnitsV1;

impl SerializeAs<MinorUnits> for MinorUnitsV1 {
    fn serialize_as<S: Serializer>(value: &MinorUnits, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(value.get())
    }
}

impl<'de> DeserializeAs<'de, MinorUnits> for MinorUnitsV1 {
    fn deserialize_as<D: Deserializer<'de>>(deserializer: D) -> Result<MinorUnits, D::Error> {
        i64::deserialize(deserializer).map(MinorUnits::new)
    }
}

stored_in_layout_1! {
    Disbursement => DisbursementV1,
    Order => OrderV1,
    Refund => RefundV1,
    Settlement => SettlementV1,
    Beneficiary => BeneficiaryV1,
    DisbursementBatch => DisbursementBatchV1,
    EventDeliveryVersion => EventDeliveryVersionV1,
    WebhookAttempt => WebhookAttemptV1,
    Entry => EntryV1,
    MerchantBook => MerchantBookV1,
    MerchantRecord => MerchantRecordV1,
    Organization => OrganizationV1,
    Bank => BankV1,
    Ewallet => EwalletV1,
    PaymentVendorConfig => PaymentVendorConfigV1,
    VendorRouting => VendorRoutingV1,
    PayoutRouting => PayoutRoutingV1,
    MerchantUser => MerchantUserV1,
}
