//! Local checks of an `exact` Solana payment: the partially signed transaction the buyer built
//! (x402 `scheme_exact_svm`). The reference facilitators leave the buyer's signature to the RPC
//! node's simulation; we check it here, with the instruction layout, the exact amount, the
//! mint, the destination token account and the fee payer's absence from every instruction.
//!
//! The wire format is parsed directly (compact-u16 arrays of fixed-size fields, documented in
//! the Solana transaction format); account addresses and the associated-token-account
//! derivation come from `solana-pubkey`, signatures from `ed25519-dalek`.

use super::error::PaymentError;
use super::types::{PaymentPayload, PaymentRequirements};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, VerifyingKey};
use serde::Deserialize;
use solana_pubkey::Pubkey;
use std::str::FromStr;

const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
const ATA_PROGRAM: &str = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
const COMPUTE_BUDGET_PROGRAM: &str = "ComputeBudget111111111111111111111111111111";
const MEMO_PROGRAM: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
const LIGHTHOUSE_PROGRAM: &str = "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95";
/// Highest compute-unit price accepted: 5 lamports per unit, in micro-lamports.
const MAX_CU_PRICE_MICROLAMPORTS: u64 = 5_000_000;
/// The SPL Token `TransferChecked` instruction tag.
const TRANSFER_CHECKED: u8 = 12;

#[derive(Deserialize)]
struct ExactSvmPayload {
    transaction: String,
}

/// What the local checks established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedSvm {
    /// The transfer authority (the buyer), base58.
    pub payer: String,
    /// The buyer's transaction signature, base58: the payment's identity for replay checks.
    pub signature: String,
}

struct Instruction<'a> {
    program: usize,
    accounts: Vec<usize>,
    data: &'a [u8],
}

struct Transaction<'a> {
    signatures: Vec<[u8; 64]>,
    /// The signed bytes.
    message: &'a [u8],
    required_signatures: usize,
    keys: Vec<Pubkey>,
    instructions: Vec<Instruction<'a>>,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PaymentError> {
        let end = self.at.checked_add(n).ok_or(PaymentError::PayloadInvalid)?;
        let out = self
            .bytes
            .get(self.at..end)
            .ok_or(PaymentError::PayloadInvalid)?;
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, PaymentError> {
        Ok(self.take(1)?[0])
    }

    /// A compact-u16 length (1–3 bytes, 7 bits each, low bits first).
    fn length(&mut self) -> Result<usize, PaymentError> {
        let mut value = 0usize;
        for i in 0..3 {
            let b = self.byte()?;
            value |= usize::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(PaymentError::PayloadInvalid)
    }
}

fn parse(bytes: &[u8]) -> Result<Transaction<'_>, PaymentError> {
    let mut r = Reader { bytes, at: 0 };
    let count = r.length()?;
    let mut signatures = Vec::with_capacity(count.min(16));
    for _ in 0..count {
        let mut sig = [0u8; 64];
        sig.copy_from_slice(r.take(64)?);
        signatures.push(sig);
    }
    let message_start = r.at;
    let first = *bytes.get(r.at).ok_or(PaymentError::PayloadInvalid)?;
    let versioned = first & 0x80 != 0;
    if versioned {
        if first & 0x7f != 0 {
            return Err(PaymentError::PayloadInvalid); // only v0 messages exist
        }
        r.byte()?;
    }
    let required_signatures = usize::from(r.byte()?);
    r.take(2)?; // read-only signed and unsigned counts
    let key_count = r.length()?;
    let mut keys = Vec::with_capacity(key_count.min(64));
    for _ in 0..key_count {
        let raw: [u8; 32] = r
            .take(32)?
            .try_into()
            .map_err(|_| PaymentError::PayloadInvalid)?;
        keys.push(Pubkey::new_from_array(raw));
    }
    r.take(32)?; // recent blockhash
    let instruction_count = r.length()?;
    let mut instructions = Vec::with_capacity(instruction_count.min(16));
    for _ in 0..instruction_count {
        let program = usize::from(r.byte()?);
        let n = r.length()?;
        let accounts = r.take(n)?.iter().map(|&i| usize::from(i)).collect();
        let len = r.length()?;
        instructions.push(Instruction {
            program,
            accounts,
            data: r.take(len)?,
        });
    }
    if versioned && r.length()? != 0 {
        // Address lookup tables hide accounts we cannot resolve offline.
        return Err(PaymentError::PayloadInvalid);
    }
    if r.at != bytes.len() || signatures.len() != required_signatures {
        return Err(PaymentError::PayloadInvalid);
    }
    let in_range = |i: &usize| *i < keys.len();
    if !instructions
        .iter()
        .all(|ix| in_range(&ix.program) && ix.accounts.iter().all(in_range))
    {
        return Err(PaymentError::PayloadInvalid);
    }
    Ok(Transaction {
        signatures,
        message: &bytes[message_start..],
        required_signatures,
        keys,
        instructions,
    })
}

fn key(text: &str) -> Result<Pubkey, PaymentError> {
    Pubkey::from_str(text).map_err(|_| PaymentError::NoMatchingRequirements)
}

/// Check a Solana `exact` payment against the requirement it matched.
pub fn check(
    payment: &PaymentPayload,
    req: &PaymentRequirements,
) -> Result<CheckedSvm, PaymentError> {
    let payload: ExactSvmPayload = serde_json::from_value(payment.payload.clone())
        .map_err(|_| PaymentError::PayloadInvalid)?;
    let bytes = STANDARD
        .decode(payload.transaction.trim())
        .map_err(|_| PaymentError::PayloadInvalid)?;
    let tx = parse(&bytes)?;
    let fee_payer = key(req
        .extra
        .get("feePayer")
        .and_then(|v| v.as_str())
        .ok_or(PaymentError::NoMatchingRequirements)?)?;
    let mint = key(&req.asset)?;
    let pay_to = key(&req.pay_to)?;
    let amount: u64 = req
        .amount
        .parse()
        .map_err(|_| PaymentError::NoMatchingRequirements)?;

    if tx.keys.first() != Some(&fee_payer) {
        return Err(PaymentError::PayloadInvalid);
    }
    let program = |ix: &Instruction<'_>| tx.keys[ix.program].to_string();
    let n = tx.instructions.len();
    if !(3..=6).contains(&n) {
        return Err(PaymentError::PayloadInvalid);
    }
    // 1. compute-unit limit, 2. compute-unit price, 3. TransferChecked, then Lighthouse or Memo.
    let (limit, price, transfer) = (
        &tx.instructions[0],
        &tx.instructions[1],
        &tx.instructions[2],
    );
    if program(limit) != COMPUTE_BUDGET_PROGRAM || limit.data.first() != Some(&2) {
        return Err(PaymentError::PayloadInvalid);
    }
    if program(price) != COMPUTE_BUDGET_PROGRAM || price.data.len() != 9 || price.data[0] != 3 {
        return Err(PaymentError::PayloadInvalid);
    }
    let micro_lamports = u64::from_le_bytes(
        price.data[1..9]
            .try_into()
            .map_err(|_| PaymentError::PayloadInvalid)?,
    );
    if micro_lamports > MAX_CU_PRICE_MICROLAMPORTS {
        return Err(PaymentError::PayloadInvalid);
    }
    for extra in &tx.instructions[3..] {
        let p = program(extra);
        if p != MEMO_PROGRAM && p != LIGHTHOUSE_PROGRAM {
            return Err(PaymentError::PayloadInvalid);
        }
    }
    let token_program = program(transfer);
    if token_program != TOKEN_PROGRAM && token_program != TOKEN_2022_PROGRAM {
        return Err(PaymentError::PayloadInvalid);
    }
    if transfer.data.len() != 10
        || transfer.data[0] != TRANSFER_CHECKED
        || transfer.accounts.len() < 4
    {
        return Err(PaymentError::PayloadInvalid);
    }
    let transferred = u64::from_le_bytes(
        transfer.data[1..9]
            .try_into()
            .map_err(|_| PaymentError::PayloadInvalid)?,
    );
    if transferred != amount {
        return Err(PaymentError::AmountMismatch);
    }
    let account = |i: usize| tx.keys[transfer.accounts[i]];
    if account(1) != mint {
        return Err(PaymentError::NoMatchingRequirements);
    }
    let token_program_id = tx.keys[transfer.program];
    let ata_program = Pubkey::from_str(ATA_PROGRAM).map_err(|_| PaymentError::PayloadInvalid)?;
    let (destination, _) = Pubkey::find_program_address(
        &[pay_to.as_ref(), token_program_id.as_ref(), mint.as_ref()],
        &ata_program,
    );
    if account(2) != destination {
        return Err(PaymentError::RecipientMismatch);
    }
    let authority = account(3);
    if tx
        .instructions
        .iter()
        .any(|ix| ix.accounts.iter().any(|&i| tx.keys[i] == fee_payer))
        || authority == fee_payer
    {
        return Err(PaymentError::PayloadInvalid);
    }
    // Every signer but the fee payer (whose slot the facilitator fills) must have signed.
    let authority_index = tx
        .keys
        .iter()
        .take(tx.required_signatures)
        .position(|k| *k == authority)
        .ok_or(PaymentError::InvalidSignature)?;
    for i in 1..tx.required_signatures {
        let vk = VerifyingKey::from_bytes(&tx.keys[i].to_bytes())
            .map_err(|_| PaymentError::InvalidSignature)?;
        vk.verify_strict(tx.message, &Signature::from_bytes(&tx.signatures[i]))
            .map_err(|_| PaymentError::InvalidSignature)?;
    }
    Ok(CheckedSvm {
        payer: authority.to_string(),
        signature: bs58::encode(tx.signatures[authority_index]).into_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_lengths_decode() {
        for (bytes, value) in [
            (&[0x00][..], 0usize),
            (&[0x7f], 127),
            (&[0x80, 0x01], 128),
            (&[0xff, 0xff, 0x03], 65535),
        ] {
            let mut r = Reader { bytes, at: 0 };
            assert_eq!(r.length().expect("length"), value);
        }
        let mut r = Reader {
            bytes: &[0x80, 0x80, 0x80, 0x01],
            at: 0,
        };
        assert!(r.length().is_err());
    }

    #[test]
    fn garbage_is_a_payload_error_not_a_panic() {
        for bytes in [&b""[..], &[1], &[1; 64], &[0xff; 300]] {
            assert!(parse(bytes).is_err());
        }
    }
}
