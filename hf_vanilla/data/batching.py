"""Token-budget batches: sentences of similar length together, so that padding stays small (section 5.1)."""

from collections.abc import Sequence

import numpy as np


class TokenBudgetBatchSampler:
    """Length-bucketed batches whose padded source and target sizes each stay within `max_tokens`.

    Every epoch, sentences are grouped into bands of `LENGTH_BAND` source lengths and sorted by target length within
    each band, alternately ascending and descending (a snake through the 2-D length grid, so that neighbouring
    batches stay close on both sides), ties broken at random; the list is cut into batches and the batch order is
    shuffled, all from `seed + epoch`, so that any process rebuilds the same batches. Process
    `rank` of `num_replicas` takes every `num_replicas`-th batch of a list cut to a multiple of `num_replicas`: all
    processes get different batches and the same number of them, so none waits at the end of an epoch."""

    LENGTH_BAND = 3

    def __init__(
        self,
        source_lengths: Sequence[int],
        target_lengths: Sequence[int],
        max_tokens: int,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        shuffle: bool = True,
    ):
        self.source_lengths = np.asarray(source_lengths, dtype=np.int64)
        self.target_lengths = np.asarray(target_lengths, dtype=np.int64)
        if self.source_lengths.shape != self.target_lengths.shape:
            raise ValueError("source_lengths and target_lengths must have one entry per sentence pair.")
        if len(self.source_lengths) == 0:
            raise ValueError("No sentence pairs to batch.")
        longest = int(max(self.source_lengths.max(), self.target_lengths.max()))
        if max_tokens < longest:
            raise ValueError(
                f"max_tokens ({max_tokens}) is smaller than the longest sentence ({longest} tokens): filter long "
                "sentences out or raise max_tokens."
            )
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is outside 0..{num_replicas - 1}.")
        self.max_tokens, self.seed, self.num_replicas, self.rank, self.shuffle = (
            max_tokens,
            seed,
            num_replicas,
            rank,
            shuffle,
        )
        band = self.source_lengths // self.LENGTH_BAND
        self._band = band
        self._snake_target = np.where(band % 2 == 0, self.target_lengths, -self.target_lengths)

    def all_batches(self, epoch: int) -> list[list[int]]:
        """Every process's batches of `epoch`, before sharding."""
        rng = np.random.default_rng(self.seed + epoch)
        tie_break = rng.random(len(self.source_lengths)) if self.shuffle else np.arange(len(self.source_lengths))
        order = np.lexsort((tie_break, self._snake_target, self._band))
        batches, current, longest_source, longest_target = [], [], 0, 0
        for index in order.tolist():
            source = max(longest_source, int(self.source_lengths[index]))
            target = max(longest_target, int(self.target_lengths[index]))
            if current and max(source, target) * (len(current) + 1) > self.max_tokens:
                batches.append(current)
                current = []
                source, target = int(self.source_lengths[index]), int(self.target_lengths[index])
            current.append(index)
            longest_source, longest_target = source, target
        batches.append(current)
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        return batches

    def batches(self, epoch: int) -> list[list[int]]:
        """This process's batches of `epoch`."""
        batches = self.all_batches(epoch)
        usable = len(batches) - len(batches) % self.num_replicas
        if usable == 0:
            raise ValueError(f"Only {len(batches)} batches for {self.num_replicas} processes: lower max_tokens.")
        return batches[self.rank : usable : self.num_replicas]

    def __len__(self) -> int:
        return len(self.batches(0))

    def padding_fraction(self, batches: list[list[int]]) -> float:
        """Share of padding among the source and target positions of `batches`."""
        real = padded = 0
        for batch in batches:
            source, target = self.source_lengths[batch], self.target_lengths[batch]
            real += int(source.sum() + target.sum())
            padded += len(batch) * int(source.max() + target.max())
        return 1.0 - real / padded


def random_batches(num_sentences: int, batch_size: int, seed: int = 0) -> list[list[int]]:
    """Batches of `batch_size` random sentences: the baseline the token-budget sampler is measured against."""
    order = np.random.default_rng(seed).permutation(num_sentences).tolist()
    return [order[i : i + batch_size] for i in range(0, num_sentences, batch_size)]
