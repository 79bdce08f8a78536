//! The layouts of the history runs' entries: locations, merchant + hash
//! keys, and creation keys. They are the data format: they never change.

use super::super::blocks::Location;
use super::super::keys::KeyPrefix;
use uuid::Uuid;

/// A location without its block prefix, which the kind gives.
pub(super) fn encode_location(location: Location) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&location.checkpoint.to_be_bytes());
    bytes[8..12].copy_from_slice(&location.part.to_be_bytes());
    bytes[12..].copy_from_slice(&location.offset.to_be_bytes());
    bytes
}

/// The creation time in a created run's key (`created_key`).
pub fn created_ms_of(key: &[u8]) -> i64 {
    (u64::from_be_bytes(key[16..24].try_into().expect("a 40-byte created key")) ^ (1 << 63)) as i64
}

/// The location in a locations run's value.
pub fn decode_location(blocks: KeyPrefix, bytes: &[u8]) -> Location {
    Location {
        blocks,
        checkpoint: u64::from_be_bytes(bytes[..8].try_into().expect("16-byte location")),
        part: u32::from_be_bytes(bytes[8..12].try_into().expect("16-byte location")),
        offset: u32::from_be_bytes(bytes[12..16].try_into().expect("16-byte location")),
    }
}

pub(super) fn uuid_of(bytes: &[u8]) -> Uuid {
    Uuid::from_slice(&bytes[..16]).expect("16-byte id")
}

/// Merchant, then a key hash: the key of a merchant lookup.
pub(in crate::store) fn merchant_hash_key(merchant_id: &Uuid, hash: u128) -> [u8; 32] {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(merchant_id.as_bytes());
    key[16..].copy_from_slice(&hash.to_be_bytes());
    key
}

/// Merchant, then creation time in an order-keeping form (sign bit
/// flipped), then id.
pub(super) fn created_key(merchant_id: &Uuid, created_ms: i64, id: &Uuid) -> [u8; 40] {
    let mut key = [0u8; 40];
    key[..16].copy_from_slice(merchant_id.as_bytes());
    key[16..24].copy_from_slice(&((created_ms as u64) ^ (1 << 63)).to_be_bytes());
    key[24..].copy_from_slice(id.as_bytes());
    key
}
