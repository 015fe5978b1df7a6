// SPDX-License-Identifier: MIT

extension Configuration {
    /// The byte budget as a validation rule: an advertisement whose legacy advertising
    /// data or scan response would not fit, or that carries a `data` type bluetoothd
    /// refuses, is an error at its JSON path (`advertisements[0]`). Disabled ones too,
    /// since they can be switched on at run time.
    func validatePayload(of advertisement: AdvertisementDefinition, into context: inout DecodingContext) {
        for problem in AdvertisingPayload(advertisement).problems {
            context.error(advertisement.sourcePath, problem)
        }
    }
}
