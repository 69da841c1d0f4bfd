from a2a_wrapper.cli import main

main()
