//! Gemini's batch mode: the requests inlined in a `batchGenerateContent`
//! call (each with its key in `metadata`), the batch polled at its name
//! until the operation is `done`, and the inlined responses read back in
//! the order the requests were sent (the documented contract: a response
//! may come without its metadata).

use serde_json::{Value, json};

use super::{BatchClient, BatchItem, Ended, FollowError, ItemAnswer, Polled, SubmitError};
use crate::transport::ApiRequest;

/// The API's base (`…/v1beta`), before `/models/…`.
fn base(url: &str) -> &str {
    url.rfind("/models/").map_or(url, |at| &url[..at])
}

pub(super) async fn submit(
    client: &BatchClient,
    items: &[&BatchItem],
) -> Result<String, SubmitError> {
    let like = &items[0].request;
    let url = like
        .url
        .replace(":generateContent", ":batchGenerateContent");
    let requests: Vec<Value> = items
        .iter()
        .map(|item| json!({"request": item.request.body, "metadata": {"key": item.custom_id}}))
        .collect();
    let body = json!({"batch": {
        "displayName": "toolgauge",
        "inputConfig": {"requests": {"requests": requests}},
    }});
    client.create(&url, like, &body, "name").await
}

pub(super) async fn poll(
    client: &BatchClient,
    id: &str,
    like: &ApiRequest,
    order: &[String],
) -> Result<Polled, FollowError> {
    let operation = client
        .get_json(&format!("{}/{id}", base(&like.url)), like)
        .await?;
    if operation["done"] != Value::Bool(true) {
        let state = operation["metadata"]["state"].as_str().unwrap_or("running");
        return Ok(Polled::Running(state.to_owned()));
    }
    let state = operation["metadata"]["state"]
        .as_str()
        .unwrap_or("done")
        .to_owned();
    if let Some(error) = operation.get("error") {
        return Ok(Polled::Ended(Ended {
            state: format!("{state}: {}", error["message"].as_str().unwrap_or("")),
            answers: Vec::new(),
        }));
    }
    let inlined = operation["response"]["inlinedResponses"]["inlinedResponses"]
        .as_array()
        .or_else(|| {
            operation["metadata"]["output"]["inlinedResponses"]["inlinedResponses"].as_array()
        })
        .cloned()
        .unwrap_or_default();
    let answers = inlined
        .iter()
        .enumerate()
        .filter_map(|(place, item)| {
            let key = item["metadata"]["key"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| order.get(place).cloned())?;
            Some((key, answer_of(item)))
        })
        .collect();
    Ok(Polled::Ended(Ended { state, answers }))
}

fn answer_of(item: &Value) -> ItemAnswer {
    match item.get("response") {
        Some(response) => ItemAnswer::Answered {
            status: 200,
            body: serde_json::to_vec(response).expect("JSON serializes"),
        },
        None => ItemAnswer::Failed {
            message: format!(
                "error {}: {}",
                item["error"]["code"],
                item["error"]["message"].as_str().unwrap_or("no response")
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_polled_at_the_api_base_whatever_the_model_path() {
        assert_eq!(
            base(
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
            ),
            "https://generativelanguage.googleapis.com/v1beta"
        );
    }
}
