//! `build`: a model made from its file, whatever its kind.

use std::sync::Arc;

use super::{
    BfclResults, LiveModel, LiveOptions, Model, ModelError, ModelFile, ModelSpec, Replayer,
    bfcl_replay, mock, tau2_replay,
};

/// Make a model ready to answer: a mock at once, a BFCL replay with its
/// result file read, a live model with its key, client and recording.
pub fn build(
    file: &ModelFile,
    options: &LiveOptions,
    replayer: Option<Arc<Replayer>>,
) -> Result<Arc<dyn Model>, ModelError> {
    file.check()?;
    Ok(match &file.spec {
        ModelSpec::Live(live) => Arc::new(LiveModel::connect(
            &file.name,
            live.provider,
            &live.api,
            options,
            replayer,
        )?),
        ModelSpec::BfclResults(spec) => {
            let results = BfclResults::load(&spec.results, spec.results_format)?;
            Arc::new(bfcl_replay::BfclReplay::new(
                &file.name,
                spec.provider,
                results,
            ))
        }
        ModelSpec::Tau2Results(spec) => {
            let results = crate::tau2::results::Tau2Results::load(&spec.results)?;
            Arc::new(tau2_replay::Tau2Replay::new(
                &file.name,
                spec.provider,
                results,
            ))
        }
        ModelSpec::Mock(kind, spec) => Arc::new(mock::MockModel::new(&file.name, *kind, spec)?),
    })
}
