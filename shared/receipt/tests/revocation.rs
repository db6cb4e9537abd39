//! A revoked key: receipts attested at or after its revocation are refused with the reason;
//! earlier ones verify and carry the revocation time (the backdating warning).

use serde_json::{Value, json};
use verifier_receipt::attest::{ReceiptError, VERIFY_CONTEXT, attest, verify_receipt};
use verifier_receipt::keys::SigningIdentity;

fn receipt(signer: &SigningIdentity, at: &str) -> Value {
    let body = json!({"verified": true, "verified_at": at});
    let att = attest(VERIFY_CONTEXT, &body, signer, at).expect("signs");
    let mut out = body;
    out["attestation"] = serde_json::to_value(att).expect("json");
    out
}

#[test]
fn a_receipt_at_or_after_the_revocation_is_refused_and_an_earlier_one_warns() {
    let signer = SigningIdentity::from_seed("k1", &[7; 32]).expect("seed");
    let mut entry = signer.public_entry();
    entry.revoked_at = Some("2026-12-07T10:00:00Z".into());
    let keys = [entry];

    let before = receipt(&signer, "2026-12-07T09:59:59.999999+00:00");
    let ok = verify_receipt(&before, &keys).expect("a receipt from before verifies");
    assert_eq!(ok.key_revoked_at.as_deref(), Some("2026-12-07T10:00:00Z"));

    for at in [
        "2026-12-07T10:00:00.000000+00:00",
        "2026-12-07T11:00:00+01:00",
        "2027-01-01T00:00:00.000000+00:00",
    ] {
        let err = verify_receipt(&receipt(&signer, at), &keys).expect_err(at);
        assert_eq!(
            err,
            ReceiptError::KeyRevoked {
                key_version: "k1".into(),
                revoked_at: "2026-12-07T10:00:00Z".into()
            },
            "{at}"
        );
        assert!(err.to_string().contains("revoked at 2026-12-07T10:00:00Z"));
    }
    // The same receipt with no revocation listed verifies without a warning.
    let plain = [signer.public_entry()];
    let ok = verify_receipt(
        &receipt(&signer, "2027-01-01T00:00:00.000000+00:00"),
        &plain,
    )
    .expect("valid");
    assert_eq!(ok.key_revoked_at, None);
}

#[test]
fn an_unreadable_revocation_time_fails_closed() {
    let signer = SigningIdentity::from_seed("k1", &[7; 32]).expect("seed");
    let mut entry = signer.public_entry();
    entry.revoked_at = Some("yesterday".into());
    let err = verify_receipt(
        &receipt(&signer, "2020-01-01T00:00:00.000000+00:00"),
        &[entry],
    )
    .expect_err("refused");
    assert_eq!(err, ReceiptError::BadRevocation);
}

#[test]
fn the_card_form_reads_both_spellings_and_writes_revoked_at_only_when_set() {
    let signer = SigningIdentity::from_seed("k1", &[7; 32]).expect("seed");
    let plain = serde_json::to_value(signer.public_entry()).expect("json");
    assert!(
        plain.get("revokedAt").is_none(),
        "an unrevoked entry is unchanged: {plain}"
    );
    for spelling in ["revokedAt", "revoked_at"] {
        let mut v = plain.clone();
        v[spelling] = json!("2026-12-07T10:00:00Z");
        let entry: verifier_receipt::PublicKeyEntry = serde_json::from_value(v).expect("entry");
        assert_eq!(entry.revoked_at.as_deref(), Some("2026-12-07T10:00:00Z"));
        assert_eq!(
            serde_json::to_value(&entry).expect("json")["revokedAt"],
            "2026-12-07T10:00:00Z"
        );
    }
}
