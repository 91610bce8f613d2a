from paictl.cli.app import main

main()
