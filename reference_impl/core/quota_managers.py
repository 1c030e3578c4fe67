"""A broker's client quota managers in one place, as Kafka's ``QuotaFactory.QuotaManagers``
(``core/src/main/scala/kafka/server/QuotaFactory.scala``): the byte rates (produce, fetch:
:class:`~.quotas.ClientQuotas`), the request-time quota (``request``, KIP-124:
:mod:`.request_quotas`) and the controller mutation quota (``controller_mutation``, KIP-599:
:mod:`.mutation_quotas`), all over the quota table of the broker's metadata image.
"""

from __future__ import annotations

from collections.abc import Callable

from .mutation_quotas import ControllerMutationQuotas
from .quotas import ClientQuotas, QuotaSource
from .request_quotas import RequestQuotas


class QuotaManagers(ClientQuotas):
    def __init__(self, source: Callable[[], QuotaSource]) -> None:
        super().__init__(source)
        self.request = RequestQuotas(self)
        self.controller_mutation = ControllerMutationQuotas(self)
