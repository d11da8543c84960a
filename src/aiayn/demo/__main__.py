from aiayn.demo.mirror import main

raise SystemExit(main())
