//! OpenAI's Batch API (both the Chat Completions and the Responses
//! endpoints): the requests as a JSONL file of `custom_id` lines uploaded
//! to `/files`, a batch made of it at `/batches`, polled until `completed`
//! (or `failed`, `expired`, `cancelled`), and its output and error files
//! read back line by line.

use serde_json::{Value, json};

use super::{
    BatchClient, BatchItem, Ended, FollowError, ItemAnswer, Polled, SubmitError, id_in, json_lines,
};
use crate::transport::ApiRequest;

/// The endpoints a batch may name, as the live request's URL ends.
const ENDPOINTS: [&str; 2] = ["/chat/completions", "/responses"];

/// The API's base (`…/v1`) and the endpoint's path (`/v1/chat/completions`).
fn base_and_endpoint(url: &str) -> (&str, String) {
    let base = ENDPOINTS
        .iter()
        .find_map(|end| url.strip_suffix(end))
        .unwrap_or(url);
    let path = reqwest::Url::parse(url)
        .map(|u| u.path().to_owned())
        .unwrap_or_default();
    (base, path)
}

/// The batch input file: one request per line.
fn input_file(items: &[&BatchItem], endpoint: &str) -> Vec<u8> {
    let mut file = Vec::new();
    for item in items {
        let line = json!({
            "custom_id": item.custom_id,
            "method": "POST",
            "url": endpoint,
            "body": item.request.body,
        });
        serde_json::to_writer(&mut file, &line).expect("a batch line serializes");
        file.push(b'\n');
    }
    file
}

pub(super) async fn submit(
    client: &BatchClient,
    items: &[&BatchItem],
) -> Result<String, SubmitError> {
    let like = &items[0].request;
    let (base, endpoint) = base_and_endpoint(&like.url);
    let file = input_file(items, &endpoint);
    let files_url = format!("{base}/files");
    let form = || {
        let part = reqwest::multipart::Part::bytes(file.clone())
            .file_name("batch.jsonl")
            .mime_str("application/jsonl")
            .expect("a valid MIME type");
        reqwest::multipart::Form::new()
            .text("purpose", "batch")
            .part("file", part)
    };
    // An upload costs nothing: tried as any request is.
    let uploaded = client
        .transport
        .send_form(&files_url, &like.headers, &form)
        .await
        .map_err(SubmitError::Refused)?;
    let uploaded: Value = serde_json::from_slice(&uploaded.body).unwrap_or(Value::Null);
    let input_file_id = id_in(&uploaded, "id", &files_url).map_err(SubmitError::Refused)?;
    let batches_url = format!("{base}/batches");
    let body = json!({
        "input_file_id": input_file_id,
        "endpoint": endpoint,
        "completion_window": "24h",
    });
    client.create(&batches_url, like, &body, "id").await
}

pub(super) async fn poll(
    client: &BatchClient,
    id: &str,
    like: &ApiRequest,
) -> Result<Polled, FollowError> {
    let (base, _) = base_and_endpoint(&like.url);
    let batch = client
        .get_json(&format!("{base}/batches/{id}"), like)
        .await?;
    let state = batch["status"].as_str().unwrap_or_default().to_owned();
    let mut answers = Vec::new();
    match state.as_str() {
        "completed" | "expired" | "cancelled" => {
            for field in ["output_file_id", "error_file_id"] {
                if let Some(file) = batch[field].as_str() {
                    let body = client
                        .get(&format!("{base}/files/{file}/content"), like)
                        .await?;
                    answers.extend(json_lines(&body).filter_map(|line| answer_of(&line)));
                }
            }
        }
        // The file itself was refused: no request ran.
        "failed" => {
            let why = batch["errors"]["data"]
                .as_array()
                .and_then(|errors| errors.first())
                .and_then(|e| e["message"].as_str())
                .unwrap_or("the batch failed validation");
            return Ok(Polled::Ended(Ended {
                answers: Vec::new(),
                state: format!("failed: {why}"),
            }));
        }
        _ => return Ok(Polled::Running(state)),
    }
    Ok(Polled::Ended(Ended { state, answers }))
}

/// One line of an output or error file.
fn answer_of(line: &Value) -> Option<(String, ItemAnswer)> {
    let custom_id = line["custom_id"].as_str()?.to_owned();
    let response = &line["response"];
    let answer = match response["status_code"].as_u64() {
        Some(status) => ItemAnswer::Answered {
            status: status as u16,
            body: serde_json::to_vec(&response["body"]).expect("JSON serializes"),
        },
        None => ItemAnswer::Failed {
            message: format!(
                "{}: {}",
                line["error"]["code"].as_str().unwrap_or("error"),
                line["error"]["message"].as_str().unwrap_or("no answer")
            ),
        },
    };
    Some((custom_id, answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_names_the_endpoint_by_its_path_and_files_go_to_the_base() {
        let (base, path) = base_and_endpoint("https://api.openai.com/v1/chat/completions");
        assert_eq!(
            (base, path.as_str()),
            ("https://api.openai.com/v1", "/v1/chat/completions")
        );
        let (base, path) = base_and_endpoint("http://127.0.0.1:9/v1/responses");
        assert_eq!(
            (base, path.as_str()),
            ("http://127.0.0.1:9/v1", "/v1/responses")
        );
    }

    #[test]
    fn an_error_line_is_a_failed_answer_and_an_output_line_its_body() {
        let ok = json!({"id": "batch_req_1", "custom_id": "t0-a1",
            "response": {"status_code": 200, "request_id": "r", "body": {"id": "x"}}, "error": null});
        assert_eq!(
            answer_of(&ok),
            Some((
                "t0-a1".into(),
                ItemAnswer::Answered {
                    status: 200,
                    body: br#"{"id":"x"}"#.to_vec()
                }
            ))
        );
        let expired = json!({"id": "batch_req_2", "custom_id": "t1-a1", "response": null,
            "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}});
        assert!(matches!(
            answer_of(&expired),
            Some((_, ItemAnswer::Failed { message })) if message.starts_with("batch_expired: ")
        ));
    }
}
