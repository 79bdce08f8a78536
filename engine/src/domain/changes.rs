//! What may differ between two versions of one order, refund or
//! disbursement: everything else is fixed when it is created.
//!
//! A webhook event is stored as its resource's id and these fields as they
//! were right after the change; its resource is read back by laying them
//! over any version of the same resource (`with_changes`). That holds only
//! while no other field ever changes after creation, so each of these
//! resources is declared with `resource_with_changes!`, which marks every
//! field `fixed` or `changing`: a new field does not compile until it is
//! put on one side or the other, and the changes struct, `changes` and
//! `with_changes` follow from that one declaration.

use crate::domain::{Disbursement, DisbursementStatus, Order, OrderStatus};
use crate::money::MinorUnits;

pub use crate::domain::disbursement::DisbursementChanges;
pub use crate::domain::order::{OrderChanges, RefundChanges};

/// Declares a resource whose every field is marked `fixed` (set when it is
/// created) or `changing`, the struct of its changing fields, and
/// `changes` and `with_changes` between the two:
///
/// ```text
/// resource_with_changes! {
///     /// The resource.
///     #[derive(Clone, Debug, PartialEq, Eq)]
///     pub struct Thing {
///         /// Id.
///         fixed id: Uuid,
///         /// Last change, Unix ms.
///         changing updated_at_ms: i64,
///     }
///
///     /// What changes of a thing.
///     #[derive(Clone, Debug, PartialEq, Eq)]
///     pub struct ThingChanges;
/// }
/// ```
macro_rules! resource_with_changes {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $( $(#[$field_attr:meta])* $mark:ident $field:ident : $ty:ty, )*
        }
        $(#[$changes_attr:meta])*
        pub struct $changes:ident;
    ) => {
        $(#[$attr])*
        pub struct $name {
            $( $(#[$field_attr])* pub $field: $ty, )*
        }
        $crate::domain::changes::resource_with_changes!(
            @split $name $changes [$(#[$changes_attr])*] [] []
            $( $mark $field : $ty [$(#[$field_attr])*] )*
        );
    };
    (
        @split $name:ident $changes:ident [$($changes_attr:tt)*] [$($fixed:ident)*]
        [$($changing:ident : $changing_ty:ty [$($changing_attr:tt)*])*]
        fixed $field:ident : $ty:ty [$($field_attr:tt)*] $($rest:tt)*
    ) => {
        $crate::domain::changes::resource_with_changes!(
            @split $name $changes [$($changes_attr)*] [$($fixed)* $field]
            [$($changing : $changing_ty [$($changing_attr)*])*]
            $($rest)*
        );
    };
    (
        @split $name:ident $changes:ident [$($changes_attr:tt)*] [$($fixed:ident)*]
        [$($changing:ident : $changing_ty:ty [$($changing_attr:tt)*])*]
        changing $field:ident : $ty:ty [$($field_attr:tt)*] $($rest:tt)*
    ) => {
        $crate::domain::changes::resource_with_changes!(
            @split $name $changes [$($changes_attr)*] [$($fixed)*]
            [$($changing : $changing_ty [$($changing_attr)*])* $field : $ty [$($field_attr)*]]
            $($rest)*
        );
    };
    (
        @split $name:ident $changes:ident [$($changes_attr:tt)*] [$($fixed:ident)*]
        [$($changing:ident : $changing_ty:ty [$($changing_attr:tt)*])*]
    ) => {
        $($changes_attr)*
        pub struct $changes {
            $( $($changing_attr)* pub $changing: $changing_ty, )*
        }

        impl $name {
            /// Its fields that change over its life, as they are now.
            pub fn changes(&self) -> $changes {
                $changes { $( $changing: Clone::clone(&self.$changing), )* }
            }

            /// This one as it was when its changing fields were `changes`.
            pub fn with_changes(&self, changes: $changes) -> $name {
                let $changes { $( $changing, )* } = changes;
                $name {
                    $( $fixed: Clone::clone(&self.$fixed), )*
                    $( $changing, )*
                }
            }
        }
    };
}
pub(crate) use resource_with_changes;

impl Disbursement {
    /// The disbursement as its creation answered it: every disbursement is
    /// created PENDING, not yet handed to a vendor, so a replay of the key
    /// that made it (a batch's) answers exactly that, whatever happened since.
    pub fn as_created(&self) -> Disbursement {
        self.with_changes(DisbursementChanges {
            status: DisbursementStatus::Pending,
            vendor_disbursement_id: None,
            payout_vendor: None,
            on_process_at_ms: None,
            failure_reason: None,
            reversal_seq: None,
            updated_at_ms: self.created_at_ms,
        })
    }
}

impl Order {
    /// The order as its creation response showed it: replays of an
    /// `Idempotency-Key` answer exactly that.
    pub fn as_created(&self) -> Order {
        self.with_changes(OrderChanges {
            status: OrderStatus::Pending,
            paid_at_ms: None,
            vendor_rrn: None,
            is_settled: false,
            fees: None,
            payment_seq: None,
            refunded_amount: MinorUnits::ZERO,
            failure_reason: None,
            settlement_id: None,
            updated_at_ms: self.created_at_ms,
        })
    }
}
