// SPDX-License-Identifier: MIT

/// Binary min-heap of timers ordered by (deadline, creation order), with O(log n) removal
/// so cancelled timers (libdbus cancels one per answered call) never accumulate.
struct TimerHeap {
    private(set) var items: [LoopTimer] = []

    var first: LoopTimer? { items.first }
    var isEmpty: Bool { items.isEmpty }

    mutating func insert(_ timer: LoopTimer) {
        precondition(timer.heapIndex < 0, "timer already scheduled")
        timer.heapIndex = items.count
        items.append(timer)
        siftUp(items.count - 1)
    }

    mutating func remove(_ timer: LoopTimer) {
        let index = timer.heapIndex
        guard index >= 0, index < items.count, items[index] === timer else { return }
        let last = items.count - 1
        if index != last {
            swapAt(index, last)
        }
        items.removeLast()
        timer.heapIndex = -1
        if index < items.count {
            siftDown(index)
            siftUp(index)
        }
    }

    /// Moves a scheduled timer to a later deadline (a repeating timer's next firing): one
    /// sift down in place instead of a removal and an insertion.
    mutating func postpone(_ timer: LoopTimer, to deadline: Int64) {
        precondition(timer.heapIndex >= 0 && items[timer.heapIndex] === timer, "timer not scheduled")
        precondition(deadline >= timer.deadline, "a timer is only postponed")
        timer.deadline = deadline
        siftDown(timer.heapIndex)
    }

    private static func less(_ a: LoopTimer, _ b: LoopTimer) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    private mutating func swapAt(_ i: Int, _ j: Int) {
        items.swapAt(i, j)
        items[i].heapIndex = i
        items[j].heapIndex = j
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(items[child], items[parent]) else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < items.count else { return }
            var smallest = left
            let right = left + 1
            if right < items.count, Self.less(items[right], items[left]) { smallest = right }
            guard Self.less(items[smallest], items[parent]) else { return }
            swapAt(smallest, parent)
            parent = smallest
        }
    }
}
