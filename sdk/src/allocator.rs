//! [`SizeClassAllocator`], the allocator for components.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

/// Blocks of at most this many bytes come from the size classes.
const SMALL_MAX: usize = 1024;
/// Size classes are this far apart, and their blocks this aligned.
const GRAIN: usize = 16;
const CLASSES: usize = SMALL_MAX / GRAIN;
/// Small blocks are carved from chunks of this size, taken from the
/// allocator of large blocks.
const CHUNK: usize = 64 * 1024;

/// A global allocator for components: blocks of up to 1 KiB come from
/// per-size free lists (16-byte classes), so taking and giving back a small
/// block is a few instructions and a freed block is reused while it is
/// still in cache; larger blocks go to [talc](https://docs.rs/talc).
///
/// Mapping a page allocates and frees every string of every row. On the
/// rmm connector's `map` this allocator took 46 to 53 µs per computer
/// where talc alone took 58 to 64 (`cargo xtask bench sync`).
/// Small blocks are never handed back to talc: a freed one waits in its
/// class for the next block of that size. The host drops an instance's
/// memory once it has mapped a page (or made any other call), so nothing is
/// held across pages.
///
/// A component opts in by declaring it (SDK 0.3.1 and 0.3.2 installed it
/// from the export macros, which broke every component that declared it as
/// the 0.3.0 guide said; since 0.4 the macros install none again):
///
/// ```ignore
/// #[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
/// #[global_allocator]
/// static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
/// ```
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
pub type SizeClassAllocator = SizeClasses<talc::wasm::WasmDynamicTalc>;

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
impl SizeClasses<talc::wasm::WasmDynamicTalc> {
    pub const fn new() -> Self {
        Self::with_large(talc::wasm::new_wasm_dynamic_allocator())
    }
}

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
impl Default for SizeClasses<talc::wasm::WasmDynamicTalc> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: components are single-threaded WebAssembly (no `atomics` target
// feature), so the cell is never shared between threads.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
unsafe impl<Large> Sync for SizeClasses<Large> {}

/// Size classes over `Large`, the allocator of large blocks and of the
/// chunks small ones are carved from. See [`SizeClassAllocator`].
pub struct SizeClasses<Large> {
    classes: UnsafeCell<Classes>,
    large: Large,
}

struct Classes {
    /// The first free block of each class (0 when none); a free block
    /// holds the address of the next.
    free: [usize; CLASSES],
    /// The unused rest of the current chunk.
    next: usize,
    end: usize,
}

impl<Large> SizeClasses<Large> {
    pub const fn with_large(large: Large) -> Self {
        SizeClasses {
            classes: UnsafeCell::new(Classes {
                free: [0; CLASSES],
                next: 0,
                end: 0,
            }),
            large,
        }
    }
}

/// The class of `layout`, when it is small enough for one.
fn class_of(layout: Layout) -> Option<usize> {
    (layout.size() <= SMALL_MAX && layout.align() <= GRAIN)
        .then(|| layout.size().saturating_sub(1) / GRAIN)
}

unsafe impl<Large: GlobalAlloc> GlobalAlloc for SizeClasses<Large> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            return unsafe { self.large.alloc(layout) };
        };
        // SAFETY: never shared between threads (see `Sync`), and no
        // reference into the cell outlives this call.
        let classes = unsafe { &mut *self.classes.get() };
        let head = classes.free[class];
        if head != 0 {
            // SAFETY: `head` is a free block of this class; its first word
            // was written by `dealloc`.
            classes.free[class] = unsafe { *(head as *const usize) };
            return head as *mut u8;
        }
        let size = (class + 1) * GRAIN;
        if classes.end - classes.next < size {
            // SAFETY: a valid, non-zero layout.
            let chunk = unsafe {
                self.large
                    .alloc(Layout::from_size_align_unchecked(CHUNK, GRAIN))
            };
            if chunk.is_null() {
                return chunk;
            }
            classes.next = chunk as usize;
            classes.end = classes.next + CHUNK;
        }
        let block = classes.next;
        classes.next += size;
        block as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            return unsafe { self.large.dealloc(ptr, layout) };
        };
        let classes = unsafe { &mut *self.classes.get() };
        // SAFETY: the block is at least GRAIN bytes and GRAIN-aligned, and
        // no longer the caller's.
        unsafe { *(ptr as *mut usize) = classes.free[class] };
        classes.free[class] = ptr as usize;
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `GlobalAlloc::realloc` requires `new_size` with the old
        // alignment to be a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (class_of(layout), class_of(new_layout)) {
            (Some(old), Some(new)) if old == new => ptr,
            (None, None) => unsafe { self.large.realloc(ptr, layout, new_size) },
            _ => {
                let moved = unsafe { self.alloc(new_layout) };
                if !moved.is_null() {
                    let kept = layout.size().min(new_size);
                    unsafe { core::ptr::copy_nonoverlapping(ptr, moved, kept) };
                    unsafe { self.dealloc(ptr, layout) };
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block the test holds, filled with its own byte.
    struct Held {
        ptr: *mut u8,
        layout: Layout,
        fill: u8,
    }

    fn filled(held: &Held) -> bool {
        // SAFETY: `held` is a live block of `layout.size()` bytes.
        let bytes = unsafe { core::slice::from_raw_parts(held.ptr, held.layout.size()) };
        bytes.iter().all(|&b| b == held.fill)
    }

    /// Thousands of allocations, reallocations across the small/large
    /// border and frees in random order: every live block keeps its
    /// contents, so no two blocks ever overlap and a freed block is only
    /// reused once it is free.
    #[test]
    fn live_blocks_never_overlap_and_keep_their_contents() {
        let allocator = SizeClasses::with_large(std::alloc::System);
        let mut held: Vec<Held> = vec![];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut random = move |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        for step in 0..20_000u32 {
            let fill = (step % 251) as u8;
            match random(4) {
                0 | 1 => {
                    let size = if random(10) == 0 {
                        1 + random(5000)
                    } else {
                        1 + random(SMALL_MAX)
                    };
                    let align = [1, 2, 4, 8, 16, 32][random(6)];
                    let layout = Layout::from_size_align(size, align).unwrap();
                    // SAFETY: a non-zero layout.
                    let ptr = unsafe { allocator.alloc(layout) };
                    assert!(!ptr.is_null());
                    assert_eq!(ptr as usize % align, 0, "{layout:?} misaligned");
                    unsafe { ptr.write_bytes(fill, size) };
                    held.push(Held { ptr, layout, fill });
                }
                2 if !held.is_empty() => {
                    let block = held.swap_remove(random(held.len()));
                    assert!(filled(&block), "a block changed while held");
                    unsafe { allocator.dealloc(block.ptr, block.layout) };
                }
                3 if !held.is_empty() => {
                    let at = random(held.len());
                    let block = &mut held[at];
                    assert!(filled(block), "a block changed while held");
                    let new_size = 1 + random(2 * SMALL_MAX + 100);
                    // SAFETY: a live block and a non-zero size.
                    let ptr = unsafe { allocator.realloc(block.ptr, block.layout, new_size) };
                    assert!(!ptr.is_null());
                    let kept = block.layout.size().min(new_size);
                    let bytes = unsafe { core::slice::from_raw_parts(ptr, kept) };
                    assert!(
                        bytes.iter().all(|&b| b == block.fill),
                        "realloc lost contents"
                    );
                    block.ptr = ptr;
                    block.layout = Layout::from_size_align(new_size, block.layout.align()).unwrap();
                    block.fill = fill;
                    unsafe { ptr.write_bytes(fill, new_size) };
                }
                _ => {}
            }
        }
        for block in held {
            assert!(filled(&block), "a block changed while held");
            unsafe { allocator.dealloc(block.ptr, block.layout) };
        }
    }

    #[test]
    fn a_freed_small_block_is_the_next_of_its_class() {
        let allocator = SizeClasses::with_large(std::alloc::System);
        let layout = Layout::from_size_align(40, 8).unwrap();
        unsafe {
            let first = allocator.alloc(layout);
            let _second = allocator.alloc(layout);
            allocator.dealloc(first, layout);
            // 33 to 48 bytes share a class.
            assert_eq!(
                allocator.alloc(Layout::from_size_align(48, 16).unwrap()),
                first
            );
        }
    }
}
