// SPDX-License-Identifier: MIT

GattdCommand.main()
