//! Anthropic's Message Batches: the requests as `{custom_id, params}`
//! posted to `/messages/batches`, polled until `processing_status` is
//! `ended`, and the results read from its `results_url` (JSONL, in any
//! order): `succeeded` with the message, or `errored`, `canceled`,
//! `expired`. The results address must be on the model's own endpoint:
//! the key goes nowhere else.

use serde_json::{Value, json};

use super::{
    BatchClient, BatchItem, Ended, FollowError, ItemAnswer, Polled, SubmitError, json_lines,
    same_origin,
};
use crate::transport::ApiRequest;

pub(super) async fn submit(
    client: &BatchClient,
    items: &[&BatchItem],
) -> Result<String, SubmitError> {
    let like = &items[0].request;
    let url = format!("{}/batches", like.url);
    let requests: Vec<Value> = items
        .iter()
        .map(|item| json!({"custom_id": item.custom_id, "params": item.request.body}))
        .collect();
    client
        .create(&url, like, &json!({ "requests": requests }), "id")
        .await
}

pub(super) async fn poll(
    client: &BatchClient,
    id: &str,
    like: &ApiRequest,
) -> Result<Polled, FollowError> {
    let batch = client
        .get_json(&format!("{}/batches/{id}", like.url), like)
        .await?;
    let status = batch["processing_status"].as_str().unwrap_or("in_progress");
    if status != "ended" {
        return Ok(Polled::Running(status.to_owned()));
    }
    let Some(results_url) = batch["results_url"].as_str() else {
        return Err(FollowError::NoResults);
    };
    if !same_origin(results_url, &like.url) {
        return Err(FollowError::ForeignResults {
            url: crate::transport::redact_url(results_url),
        });
    }
    let body = client.get(results_url, like).await?;
    let answers = json_lines(&body)
        .filter_map(|line| answer_of(&line))
        .collect();
    Ok(Polled::Ended(Ended {
        state: "ended".to_owned(),
        answers,
    }))
}

/// One line of the results.
fn answer_of(line: &Value) -> Option<(String, ItemAnswer)> {
    let custom_id = line["custom_id"].as_str()?.to_owned();
    let result = &line["result"];
    let answer = match result["type"].as_str() {
        Some("succeeded") => ItemAnswer::Answered {
            status: 200,
            body: serde_json::to_vec(&result["message"]).expect("JSON serializes"),
        },
        Some("errored") => {
            let error = &result["error"]["error"];
            ItemAnswer::Failed {
                message: format!(
                    "errored: {}: {}",
                    error["type"].as_str().unwrap_or("error"),
                    error["message"].as_str().unwrap_or("no message")
                ),
            }
        }
        other => ItemAnswer::Failed {
            message: other.unwrap_or("no result").to_owned(),
        },
    };
    Some((custom_id, answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_result_type_reads_as_an_answer_or_a_failure_named_by_it() {
        let ok = json!({"custom_id": "t0-a1", "result": {"type": "succeeded",
            "message": {"id": "msg_1", "type": "message"}}});
        assert!(matches!(
            answer_of(&ok),
            Some((id, ItemAnswer::Answered { status: 200, .. })) if id == "t0-a1"
        ));
        let errored = json!({"custom_id": "t1-a1", "result": {"type": "errored",
            "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}}}});
        assert_eq!(
            answer_of(&errored).unwrap().1,
            ItemAnswer::Failed {
                message: "errored: invalid_request_error: max_tokens: Field required".into()
            }
        );
        let expired = json!({"custom_id": "t2-a1", "result": {"type": "expired"}});
        assert_eq!(
            answer_of(&expired).unwrap().1,
            ItemAnswer::Failed {
                message: "expired".into()
            }
        );
    }
}
