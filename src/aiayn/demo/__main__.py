"""``python -m aiayn.demo``: the demo generator, for now still :mod:`aiayn.data.demo_corpus`."""
from aiayn.data.demo_corpus import main
raise SystemExit(main())
