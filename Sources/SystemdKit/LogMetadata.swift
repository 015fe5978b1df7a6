// SPDX-License-Identifier: MIT

import Logging

/// Metadata precedence shared by the handlers: handler metadata, then the metadata
/// provider, then the metadata of the call itself (later wins).
func mergedMetadata(
    handler: Logger.Metadata,
    provider: Logger.MetadataProvider?,
    call: Logger.Metadata?
) -> Logger.Metadata {
    var merged = handler
    if let provided = provider?.get(), !provided.isEmpty {
        merged.merge(provided) { _, new in new }
    }
    if let call, !call.isEmpty {
        merged.merge(call) { _, new in new }
    }
    return merged
}
